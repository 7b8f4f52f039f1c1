//! `sluice group` against a real `sluice server`, as an operator uses it: list, describe
//! and delete consumer groups and reset their offsets over the wire, with
//! `kafka-consumer-groups.sh`'s output and Kafka's refusals.
//!
//! The tests set the scene with the wire protocol: records are produced with Produce,
//! offsets committed with the admin client's OffsetCommit (generation -1), and an active
//! member joins with JoinGroup/SyncGroup as a classic consumer's leader would.

use std::collections::BTreeMap;
mod cli;

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    GroupId, JoinGroupRequest, ProduceRequest, SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use sluice_client::{Admin, ClientConfig, Connection, NewTopic, TopicPartition};
use sluice_protocol::consumer_protocol::{
    Assignment, Subscription, encode_assignment, encode_subscription,
};
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};

use cli::Server;

/// The timestamp of the first record of every partition; record `i` is `i` seconds later.
const FIRST_TIMESTAMP_MS: i64 = 1_600_000_000_000;
/// FIRST_TIMESTAMP_MS + 1.5 s, as `--to-datetime` takes it: the first record at or after
/// it is each partition's offset 2.
const DATETIME_BETWEEN_OFFSETS_1_AND_2: &str = "2020-09-13T12:26:41.500Z";

impl Server {
    /// Starts a server whose groups rebalance at once.
    fn start_for_groups() -> Server {
        Server::start(&[
            "group.initial.rebalance.delay.ms=0",
            "offsets.topic.replication.factor=1",
        ])
    }

    /// Runs a `sluice group` command that must succeed; returns its stdout and stderr.
    fn group_ok(&self, args: &[&str]) -> (String, String) {
        self.ok("group", args)
    }

    /// Runs a command that must succeed; returns its stdout.
    fn stdout(&self, args: &[&str]) -> String {
        self.group_ok(args).0
    }

    /// Runs a `sluice group` command that must fail; returns its stderr.
    fn group_fails(&self, args: &[&str]) -> String {
        self.fails("group", args)
    }

    /// Runs `scene` with an admin client and a raw connection to this server.
    fn with_cluster<T>(&self, scene: impl AsyncFnOnce(&Admin, &Connection) -> T) -> T {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let config = ClientConfig::new([self.address.clone()]);
            let admin = Admin::connect(config.clone()).await.unwrap();
            let connection = Connection::connect(&self.address, &config).await.unwrap();
            scene(&admin, &connection).await
        })
    }
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

/// Creates `topics` (name, partitions) and produces `counts[partition]` records to each
/// partition, record `i` stamped FIRST_TIMESTAMP_MS + i seconds.
async fn create_and_produce(admin: &Admin, connection: &Connection, topics: &[(&str, &[usize])]) {
    let new_topics: Vec<NewTopic> = topics
        .iter()
        .map(|(name, counts)| NewTopic {
            name: name.to_string(),
            num_partitions: Some(counts.len() as i32),
            replication_factor: Some(1),
            configs: Vec::new(),
        })
        .collect();
    for (name, result) in admin.create_topics(&new_topics, false).await.unwrap() {
        result.unwrap_or_else(|error| panic!("creating {name}: {error}"));
    }
    for (name, counts) in topics {
        for (partition, count) in counts.iter().enumerate() {
            let mut builder = RecordBatchBuilder::new(Compression::None);
            for i in 0..*count {
                builder
                    .append(&NewRecord {
                        timestamp: FIRST_TIMESTAMP_MS + 1000 * i as i64,
                        key: None,
                        value: Some(Bytes::from(format!("{name}-{partition}-{i}"))),
                        headers: Vec::new(),
                    })
                    .unwrap();
            }
            let request = ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(10_000)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(topic_name(name))
                        .with_partition_data(vec![
                            PartitionProduceData::default()
                                .with_index(partition as i32)
                                .with_records(Some(builder.build())),
                        ]),
                ]);
            let response = connection.send(9, &request).await.unwrap();
            let answer = &response.responses[0].partition_responses[0];
            assert_eq!(answer.error_code, 0, "producing to {name}-{partition}");
        }
    }
}

/// Commits offsets as an admin (OffsetCommit, generation -1, no member).
async fn commit(admin: &Admin, group: &str, offsets: &[(&str, i32, i64)]) {
    let offsets: BTreeMap<TopicPartition, i64> = offsets
        .iter()
        .map(|(topic, partition, offset)| (TopicPartition::new(*topic, *partition), *offset))
        .collect();
    let results = admin.alter_group_offsets(group, &offsets).await.unwrap();
    for (partition, result) in results {
        result.unwrap_or_else(|error| panic!("committing {partition}: {error}"));
    }
}

/// Joins `group` as a classic consumer that leads it and assigns itself every partition
/// of `orders` (JoinGroup, then SyncGroup); returns the member id. The member never
/// heartbeats: it stays in the group for its 60 s session.
async fn join_as_leader(connection: &Connection, group: &str, partitions: Vec<i32>) -> String {
    let subscription = encode_subscription(&Subscription {
        version: 1,
        topics: vec!["orders".to_string()],
        user_data: None,
        owned_partitions: Vec::new(),
        generation_id: -1,
        rack_id: None,
    });
    let join = |member_id: String| {
        JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_session_timeout_ms(60_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(StrBytes::from_string(member_id))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(StrBytes::from_static_str("range"))
                    .with_metadata(Bytes::from(subscription.clone())),
            ])
    };
    // v4+: the first join only hands out a member id (MEMBER_ID_REQUIRED).
    let first = connection.send(5, &join(String::new())).await.unwrap();
    assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
    let joined = connection
        .send(5, &join(first.member_id.to_string()))
        .await
        .unwrap();
    assert_eq!(joined.error_code, 0, "JoinGroup");
    assert_eq!(joined.leader, joined.member_id, "the only member leads");
    let member_id = joined.member_id.to_string();
    let assignment = encode_assignment(&Assignment {
        version: 1,
        partitions: vec![("orders".to_string(), partitions)],
        user_data: None,
    });
    let synced = connection
        .send(
            3,
            &SyncGroupRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                .with_generation_id(joined.generation_id)
                .with_member_id(joined.member_id.clone())
                .with_assignments(vec![
                    SyncGroupRequestAssignment::default()
                        .with_member_id(joined.member_id.clone())
                        .with_assignment(Bytes::from(assignment)),
                ]),
        )
        .await
        .unwrap();
    assert_eq!(synced.error_code, 0, "SyncGroup");
    member_id
}

/// A plan as `--reset-offsets` prints it.
fn plan(group: &str, rows: &[(&str, i32, i64)]) -> String {
    let mut out = format!(
        "\n{:<30} {:<30} {:<10} {:<15}",
        "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"
    );
    for (topic, partition, offset) in rows {
        out += &format!("\n{group:<30} {topic:<30} {partition:<10} {offset:<15}");
    }
    out + "\n"
}

/// An offsets table as `--describe` prints it for a group whose rows have no owner.
fn unowned_offsets(group: &str, rows: &[(&str, i32, &str, &str, &str)]) -> String {
    let mut out = format!(
        "\n{:<15} {:<15} {:<10} {:<15} {:<15} {:<15} {:<15} {:<15} {}",
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID"
    );
    for (topic, partition, current, end, lag) in rows {
        out += &format!(
            "\n{group:<15} {topic:<15} {partition:<10} {current:<15} {end:<15} {lag:<15} {:<15} {:<15} -",
            "-", "-"
        );
    }
    out + "\n"
}

#[test]
fn an_inactive_group_is_listed_described_reset_and_deleted() {
    let server = Server::start_for_groups();
    server.with_cluster(async |admin, connection| {
        // orders: 4, 3 and 3 records; events: 4.
        create_and_produce(
            admin,
            connection,
            &[("orders", &[4, 3, 3]), ("events", &[4])],
        )
        .await;
        commit(
            admin,
            "g1",
            &[("orders", 0, 2), ("orders", 1, 3), ("events", 0, 1)],
        )
        .await;
    });

    assert_eq!(server.stdout(&["list"]), "g1\n");
    assert_eq!(
        server.stdout(&["list", "--state"]),
        format!(
            "{:<25} {:<20}\n{:<25} {:<20}\n",
            "GROUP", "STATE", "g1", "Empty"
        )
    );
    assert_eq!(
        server.stdout(&["list", "--state", "stable"]),
        format!("{:<25} {:<20}\n", "GROUP", "STATE")
    );
    assert_eq!(
        server.stdout(&["list", "--type", "--state", "empty"]),
        format!(
            "{:<25} {:<20} {:<20}\n{:<25} {:<20} {:<20}\n",
            "GROUP", "TYPE", "STATE", "g1", "Classic", "Empty"
        )
    );
    let stderr = server.group_fails(&["list", "--state", "sleeping"]);
    assert!(
        stderr.contains("Invalid state list 'sleeping'. Valid states are: "),
        "{stderr}"
    );

    // Committed offsets, log end offsets and lag; no member owns a partition.
    let committed = unowned_offsets(
        "g1",
        &[
            ("events", 0, "1", "4", "3"),
            ("orders", 0, "2", "4", "2"),
            ("orders", 1, "3", "3", "0"),
        ],
    );
    let (stdout, stderr) = server.group_ok(&["describe", "g1"]);
    assert_eq!(stdout, committed);
    assert_eq!(stderr, "\nConsumer group 'g1' has no active members.\n");
    assert_eq!(server.stdout(&["describe", "g1", "--offsets"]), committed);
    assert_eq!(
        server.stdout(&["describe", "g1", "--state"]),
        format!(
            "\n{:<15} {:<25} {:<20} {:<20} #MEMBERS\n{:<15} {:<25} {:<20} {:<20} 0\n",
            "GROUP",
            "COORDINATOR (ID)",
            "ASSIGNMENT-STRATEGY",
            "STATE",
            "g1",
            format!("127.0.0.1:{}  (1)", server.port()),
            "-",
            "Empty"
        )
    );
    assert_eq!(
        server.stdout(&["describe", "g1", "--members"]),
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
    );

    // Every scenario as a dry run (the default, or --dry-run): the plan, nothing written.
    let dry_runs: [(&[&str], String); 9] = [
        (
            &["--all-topics", "--to-earliest"],
            plan(
                "g1",
                &[("events", 0, 0), ("orders", 0, 0), ("orders", 1, 0)],
            ),
        ),
        (
            &["--topic", "orders", "--to-latest", "--dry-run"],
            plan(
                "g1",
                &[("orders", 0, 4), ("orders", 1, 3), ("orders", 2, 3)],
            ),
        ),
        (
            &["--topic", "orders:0,1", "--shift-by", "-1"],
            plan("g1", &[("orders", 0, 1), ("orders", 1, 2)]),
        ),
        // Kept within [log start, log end].
        (
            &["--all-topics", "--shift-by", "-3"],
            plan(
                "g1",
                &[("events", 0, 0), ("orders", 0, 0), ("orders", 1, 0)],
            ),
        ),
        (
            &["--all-topics", "--shift-by", "2"],
            plan(
                "g1",
                &[("events", 0, 3), ("orders", 0, 4), ("orders", 1, 3)],
            ),
        ),
        (
            &["--topic", "orders", "--topic", "events", "--to-offset", "3"],
            plan(
                "g1",
                &[
                    ("events", 0, 3),
                    ("orders", 0, 3),
                    ("orders", 1, 3),
                    ("orders", 2, 3),
                ],
            ),
        ),
        (
            &["--all-topics", "--to-offset", "100"],
            plan(
                "g1",
                &[("events", 0, 4), ("orders", 0, 4), ("orders", 1, 3)],
            ),
        ),
        (
            &[
                "--all-topics",
                "--to-datetime",
                DATETIME_BETWEEN_OFFSETS_1_AND_2,
            ],
            plan(
                "g1",
                &[("events", 0, 2), ("orders", 0, 2), ("orders", 1, 2)],
            ),
        ),
        // Nothing that late: the log end offset.
        (
            &[
                "--topic",
                "events",
                "--to-datetime",
                "2100-01-01T00:00:00.000",
            ],
            plan("g1", &[("events", 0, 4)]),
        ),
    ];
    for (args, expected) in &dry_runs {
        let mut command = vec!["reset-offsets", "g1"];
        command.extend_from_slice(args);
        assert_eq!(server.stdout(&command), *expected, "{command:?}");
    }
    let (_, stderr) =
        server.group_ok(&["reset-offsets", "g1", "--all-topics", "--to-offset", "100"]);
    assert!(
        stderr.contains("New offset (100) is higher than latest offset for topic partition orders-1. Value will be set to 3"),
        "{stderr}"
    );
    let (_, stderr) = server.group_ok(&[
        "reset-offsets",
        "g1",
        "--topic",
        "events",
        "--to-datetime",
        "2100-01-01T00:00:00.000",
    ]);
    assert!(
        stderr.contains(
            "Warn: Partition 0 from topic events is empty. Falling back to latest known offset."
        ),
        "{stderr}"
    );
    assert_eq!(
        server.stdout(&["describe", "g1"]),
        committed,
        "dry runs write nothing"
    );

    // --execute writes the plan it prints.
    let executions: [(&[&str], String); 4] = [
        (
            &["--topic", "orders:0", "--to-earliest"],
            plan("g1", &[("orders", 0, 0)]),
        ),
        (
            &["--topic", "events", "--shift-by", "2"],
            plan("g1", &[("events", 0, 3)]),
        ),
        (
            &[
                "--topic",
                "orders:1",
                "--to-datetime",
                DATETIME_BETWEEN_OFFSETS_1_AND_2,
            ],
            plan("g1", &[("orders", 1, 2)]),
        ),
        (
            &["--topic", "orders:2", "--to-latest"],
            plan("g1", &[("orders", 2, 3)]),
        ),
    ];
    for (args, expected) in &executions {
        let mut command = vec!["reset-offsets", "g1", "--execute"];
        command.extend_from_slice(args);
        assert_eq!(server.stdout(&command), *expected, "{command:?}");
    }
    assert_eq!(
        server.stdout(&["describe", "g1"]),
        unowned_offsets(
            "g1",
            &[
                ("events", 0, "3", "4", "1"),
                ("orders", 0, "0", "4", "4"),
                ("orders", 1, "2", "3", "1"),
                ("orders", 2, "3", "3", "0"),
            ],
        )
    );
    assert_eq!(
        server.stdout(&[
            "reset-offsets",
            "g1",
            "--all-topics",
            "--to-offset",
            "1",
            "--execute"
        ]),
        plan(
            "g1",
            &[
                ("events", 0, 1),
                ("orders", 0, 1),
                ("orders", 1, 1),
                ("orders", 2, 1)
            ]
        )
    );
    assert_eq!(
        server.stdout(&["describe", "g1"]),
        unowned_offsets(
            "g1",
            &[
                ("events", 0, "1", "4", "3"),
                ("orders", 0, "1", "4", "3"),
                ("orders", 1, "1", "3", "2"),
                ("orders", 2, "1", "3", "2"),
            ],
        )
    );

    // Refusals, with Kafka's messages.
    let refusals: [(&[&str], &str); 6] = [
        (
            &[
                "reset-offsets",
                "g1",
                "--topic",
                "fresh:0",
                "--shift-by",
                "1",
            ],
            "The partitions \"fresh-0\" do not exist",
        ),
        (
            &[
                "reset-offsets",
                "g1",
                "--topic",
                "orders:7",
                "--to-earliest",
            ],
            "The partitions \"orders-7\" do not exist",
        ),
        (
            &[
                "reset-offsets",
                "g1",
                "--topic",
                "orders:x",
                "--to-earliest",
            ],
            "Invalid partition 'x' specified in topic arg 'orders:x'",
        ),
        (
            &[
                "reset-offsets",
                "g1",
                "--topic",
                "orders",
                "--to-datetime",
                "2020-01-01",
            ],
            "It does not contain a 'T' according to ISO8601 format",
        ),
        (
            &[
                "reset-offsets",
                "g1",
                "--all-topics",
                "--to-earliest",
                "--to-latest",
            ],
            "cannot be used with",
        ),
        (&["reset-offsets", "g1", "--to-earliest"], "--all-topics"),
    ];
    for (args, expected) in refusals {
        let stderr = server.group_fails(args);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }

    // A group that has never committed: reset creates its offsets, as in Kafka.
    assert_eq!(
        server.stdout(&[
            "reset-offsets",
            "g2",
            "--topic",
            "events",
            "--to-offset",
            "2",
            "--execute"
        ]),
        plan("g2", &[("events", 0, 2)])
    );
    assert_eq!(server.stdout(&["list"]), "g1\ng2\n");
    let stderr = server.group_fails(&[
        "reset-offsets",
        "g2",
        "--topic",
        "orders:0",
        "--shift-by",
        "1",
    ]);
    assert!(
        stderr.contains(
            "Cannot shift offset for partition orders-0 since there is no current committed offset"
        ),
        "{stderr}"
    );

    assert_eq!(
        server.stdout(&["delete", "g1", "g2"]),
        "Deletion of requested consumer groups ('g1', 'g2') was successful.\n"
    );
    assert_eq!(server.stdout(&["list"]), "");
    let stderr = server.group_fails(&["describe", "g1"]);
    assert!(
        stderr.contains("Consumer group 'g1' does not exist."),
        "{stderr}"
    );
    let stderr = server.group_fails(&["delete", "g1"]);
    assert!(
        stderr.contains(
            "Deletion of some consumer groups failed:\n* Group 'g1' could not be deleted due to: \
             The group id does not exist. (GROUP_ID_NOT_FOUND)"
        ),
        "{stderr}"
    );
}

#[test]
fn an_active_group_shows_its_members_and_refuses_resets_and_deletes() {
    let server = Server::start_for_groups();
    let member_id = server.with_cluster(async |admin, connection| {
        create_and_produce(admin, connection, &[("orders", &[4, 3, 3])]).await;
        // Committed while the group is empty, then a member joins and owns orders-0,1.
        commit(admin, "live", &[("orders", 1, 2), ("orders", 2, 3)]).await;
        join_as_leader(connection, "live", vec![0, 1]).await
    });
    // The client id comes from the request header of the joining connection.
    let client_id = "sluice-client";

    assert_eq!(
        server.stdout(&["list", "--state"]),
        format!(
            "{:<25} {:<20}\n{:<25} {:<20}\n",
            "GROUP", "STATE", "live", "Stable"
        )
    );

    let (stdout, stderr) = server.group_ok(&["describe", "live"]);
    assert_eq!(stderr, "", "a stable group has no notice");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    assert_eq!(lines[0], "");
    let consumer_width = member_id.len().max(15);
    let host = lines[2].split_whitespace().nth(7).unwrap().to_string();
    assert!(host.ends_with("127.0.0.1"), "the member's host: {stdout}");
    let host_width = host.len().max(15);
    let row = |partition: &str,
               current: &str,
               end: &str,
               lag: &str,
               consumer: &str,
               host: &str,
               client: &str| {
        format!(
            "{:<15} {:<15} {partition:<10} {current:<15} {end:<15} {lag:<15} {consumer:<consumer_width$} {host:<host_width$} {client}",
            "live", "orders"
        )
    };
    assert_eq!(
        lines[1..],
        [
            format!(
                "{:<15} {:<15} {:<10} {:<15} {:<15} {:<15} {:<consumer_width$} {:<host_width$} CLIENT-ID",
                "GROUP",
                "TOPIC",
                "PARTITION",
                "CURRENT-OFFSET",
                "LOG-END-OFFSET",
                "LAG",
                "CONSUMER-ID",
                "HOST"
            ),
            row("0", "-", "4", "-", &member_id, &host, client_id),
            row("1", "2", "3", "1", &member_id, &host, client_id),
            // Committed, owned by no member.
            row("2", "3", "3", "0", "-", "-", "-"),
        ]
    );

    assert_eq!(
        server.stdout(&["describe", "live", "--members", "--verbose"]),
        format!(
            "\n{:<15} {:<consumer_width$} {:<host_width$} {:<15} {:<15} {:<15} {:<20} {:<15} {:<20}\n\
             {:<15} {member_id:<consumer_width$} {host:<host_width$} {client_id:<15} {:<15} {:<15} {:<20} {:<15} {:<20}\n",
            "GROUP",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
            "#PARTITIONS",
            "CURRENT-EPOCH",
            "CURRENT-ASSIGNMENT",
            "TARGET-EPOCH",
            "TARGET-ASSIGNMENT",
            "live",
            "2",
            "-",
            "orders:0,1",
            "-",
            "-",
        )
    );
    assert_eq!(
        server.stdout(&["describe", "live", "--state"]),
        format!(
            "\n{:<15} {:<25} {:<20} {:<20} #MEMBERS\n{:<15} {:<25} {:<20} {:<20} 1\n",
            "GROUP",
            "COORDINATOR (ID)",
            "ASSIGNMENT-STRATEGY",
            "STATE",
            "live",
            format!("127.0.0.1:{}  (1)", server.port()),
            "range",
            "Stable"
        )
    );

    let stderr = server.group_fails(&[
        "reset-offsets",
        "live",
        "--all-topics",
        "--to-earliest",
        "--execute",
    ]);
    assert!(
        stderr.contains(
            "Assignments can only be reset if the group 'live' is inactive, but the current \
             state is Stable."
        ),
        "{stderr}"
    );
    let stderr = server.group_fails(&["delete", "live"]);
    assert!(
        stderr.contains(
            "* Group 'live' could not be deleted due to: The group is not empty. (NON_EMPTY_GROUP)"
        ),
        "{stderr}"
    );
    // Nothing changed.
    assert_eq!(server.stdout(&["describe", "live"]), stdout);
}

#[test]
fn a_consumer_protocol_group_shows_epochs_and_the_server_assignor() {
    use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;
    let server = Server::start_for_groups();
    let member_id = "kip848-member-0000000001";
    let epoch = server.with_cluster(async |admin, connection| {
        create_and_produce(admin, connection, &[("orders", &[4, 3, 3])]).await;
        // As a client does: FindCoordinator (which creates __consumer_offsets), then
        // heartbeats while the coordinator loads.
        admin.find_coordinator("modern", 0).await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let joined = connection
                .send(
                    1,
                    &ConsumerGroupHeartbeatRequest::default()
                        .with_group_id(GroupId(StrBytes::from_static_str("modern")))
                        .with_member_id(StrBytes::from_static_str(member_id))
                        .with_member_epoch(0)
                        .with_rebalance_timeout_ms(10_000)
                        .with_subscribed_topic_names(Some(vec![topic_name("orders")]))
                        .with_topic_partitions(Some(vec![])),
                )
                .await
                .unwrap();
            if joined.error_code == 0 {
                break joined.member_epoch;
            }
            // COORDINATOR_LOAD_IN_PROGRESS (14) or NOT_COORDINATOR (16) while it loads.
            assert!([14, 16].contains(&joined.error_code), "{joined:?}");
            assert!(std::time::Instant::now() < deadline, "{joined:?}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    let stdout = server.stdout(&["describe", "modern", "--members", "--verbose"]);
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert_eq!(rows[0][0], "GROUP");
    // GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT
    // TARGET-EPOCH TARGET-ASSIGNMENT
    assert_eq!(rows[1][0], "modern");
    assert_eq!(rows[1][1], member_id);
    assert_eq!(rows[1][4], "3", "every partition: {stdout}");
    assert_eq!(rows[1][5], epoch.to_string());
    assert_eq!(rows[1][6], "orders:0,1,2");
    assert_eq!(rows[1][7], epoch.to_string());
    assert_eq!(rows[1][8], "orders:0,1,2");
    let state = server.stdout(&["describe", "modern", "--state"]);
    let row: Vec<&str> = state.lines().last().unwrap().split_whitespace().collect();
    assert_eq!(row[0], "modern");
    assert_eq!(row[3], "uniform", "{state}");
    assert_eq!(row[4], "Stable", "{state}");
    assert_eq!(row[5], "1", "{state}");
    assert_eq!(
        server.stdout(&["list", "--type"]),
        format!(
            "{:<25} {:<20}\n{:<25} {:<20}\n",
            "GROUP", "TYPE", "modern", "Consumer"
        )
    );
}
