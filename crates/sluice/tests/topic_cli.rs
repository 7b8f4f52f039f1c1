//! `sluice topic` against a real `sluice server`, as an operator uses them: create, list,
//! describe, alter and delete topics over the wire, with `kafka-topics.sh`'s output and
//! Kafka's error names when the cluster refuses.

mod cli;

use std::collections::BTreeMap;
use std::process::Output;

use cli::Server;
use sluice_client::{Admin, ClientConfig, ConfigSource};

impl Server {
    /// Runs a `sluice topic` command that must succeed; returns its stdout.
    fn topic_ok(&self, args: &[&str]) -> String {
        self.ok("topic", args).0
    }
}

fn topic(bootstrap: &str, args: &[&str]) -> Output {
    cli::run("topic", bootstrap, args)
}

/// A topic's configs as DescribeConfigs returns them, read with the client library:
/// name → (value, source).
fn topic_configs(server: &Server, topic: &str) -> BTreeMap<String, (Option<String>, ConfigSource)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let admin = Admin::connect(ClientConfig::new([server.address.clone()]))
            .await
            .unwrap();
        let mut results = admin
            .describe_topic_configs(&[topic.to_string()])
            .await
            .unwrap();
        results
            .remove(topic)
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|config| (config.name, (config.value, config.source)))
            .collect()
    })
}

/// The `Configs:` of `sluice topic describe <topic>`'s topic line, by name (the values in
/// these tests hold no commas).
fn described_configs(server: &Server, topic: &str) -> BTreeMap<String, String> {
    let described = server.topic_ok(&["describe", topic]);
    let configs = described
        .lines()
        .next()
        .and_then(|line| line.split('\t').find_map(|f| f.strip_prefix("Configs: ")))
        .unwrap_or_else(|| panic!("no Configs field: {described}"));
    configs
        .split(',')
        .filter(|config| !config.is_empty())
        .map(|config| {
            let (name, value) = config.split_once('=').unwrap();
            (name.to_string(), value.to_string())
        })
        .collect()
}

/// The `PartitionCount:` of `sluice topic describe <topic>`, checked against its partition
/// lines (one per partition, each with a leader).
fn described_partition_count(server: &Server, topic: &str) -> usize {
    let described = server.topic_ok(&["describe", topic]);
    let lines: Vec<&str> = described.lines().collect();
    let count: usize = lines[0]
        .split('\t')
        .find_map(|field| field.strip_prefix("PartitionCount: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(lines.len(), 1 + count, "{described}");
    for (partition, line) in lines[1..].iter().enumerate() {
        assert_eq!(
            *line,
            format!("\tTopic: {topic}\tPartition: {partition}\tLeader: 1\tReplicas: 1\tIsr: 1")
        );
    }
    count
}

#[test]
fn topics_are_created_listed_described_and_deleted() {
    let server = Server::start(&[]);
    let created = server.topic_ok(&[
        "create",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "cleanup.policy=compact",
    ]);
    assert_eq!(created, "Created topic orders.\n");
    assert_eq!(
        server.topic_ok(&["create", "events"]),
        "Created topic events.\n"
    );

    let stderr = server.fails("topic", &["create", "orders", "--partitions", "3"]);
    assert!(
        stderr.contains("topic 'orders' already exists (TOPIC_ALREADY_EXISTS)"),
        "{stderr}"
    );
    assert_eq!(
        server.topic_ok(&["create", "orders", "--if-not-exists"]),
        ""
    );

    assert_eq!(
        server.topic_ok(&["list", "--exclude-internal"]),
        "events\norders\n"
    );

    // kafka-topics.sh's format: the topic line, then one line per partition.
    let described = server.topic_ok(&["describe", "orders"]);
    let lines: Vec<&str> = described.lines().collect();
    assert_eq!(lines.len(), 4, "{described}");
    let fields: Vec<&str> = lines[0].split('\t').collect();
    assert_eq!(fields[0], "Topic: orders", "{described}");
    let topic_id = fields[1].strip_prefix("TopicId: ").unwrap();
    assert_eq!(topic_id.len(), 22, "a base64 UUID: {described}");
    assert_ne!(topic_id, "AAAAAAAAAAAAAAAAAAAAAA", "a real topic id");
    assert_eq!(fields[2..4], ["PartitionCount: 3", "ReplicationFactor: 1"]);
    let configs = fields[4].strip_prefix("Configs: ").unwrap();
    assert!(
        configs
            .split(',')
            .any(|config| config == "cleanup.policy=compact"),
        "{described}"
    );
    for (partition, line) in lines[1..].iter().enumerate() {
        assert_eq!(
            *line,
            format!("\tTopic: orders\tPartition: {partition}\tLeader: 1\tReplicas: 1\tIsr: 1")
        );
    }

    // Without names: every topic, by name.
    let all = server.topic_ok(&["describe", "--exclude-internal"]);
    let topics: Vec<&str> = all
        .lines()
        .filter_map(|line| line.strip_prefix("Topic: "))
        .map(|line| line.split('\t').next().unwrap())
        .collect();
    assert_eq!(topics, ["events", "orders"], "{all}");
    assert!(all.ends_with(&described), "{all}");

    let stderr = server.fails("topic", &["describe", "missing"]);
    assert!(
        stderr.contains("topic 'missing' does not exist (UNKNOWN_TOPIC_OR_PARTITION)"),
        "{stderr}"
    );

    assert_eq!(
        server.topic_ok(&["delete", "orders"]),
        "Deleted topic orders.\n"
    );
    assert_eq!(server.topic_ok(&["list", "--exclude-internal"]), "events\n");
    let stderr = server.fails("topic", &["delete", "orders"]);
    assert!(
        stderr.contains("topic 'orders' does not exist (UNKNOWN_TOPIC_OR_PARTITION)"),
        "{stderr}"
    );
    assert_eq!(server.topic_ok(&["delete", "orders", "--if-exists"]), "");
}

#[test]
fn invalid_topics_are_refused_with_kafkas_error_names() {
    let server = Server::start(&[]);
    let cases: [(&[&str], &str); 5] = [
        (&["create", "bad/name"], "(INVALID_TOPIC_EXCEPTION)"),
        (
            &["create", "none", "--partitions", "0"],
            "(INVALID_PARTITIONS)",
        ),
        (
            &["create", "wide", "--replication-factor", "3"],
            "(INVALID_REPLICATION_FACTOR)",
        ),
        (
            &["create", "odd", "--config", "cleanup.policy=sometimes"],
            "(INVALID_CONFIG)",
        ),
        (
            &["create", "odd", "--config", "cleanup.policy"],
            "--config expects key=value",
        ),
    ];
    for (args, expected) in cases {
        let stderr = server.fails("topic", args);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    assert_eq!(server.topic_ok(&["list", "--exclude-internal"]), "");
}

#[test]
fn an_unreachable_cluster_is_a_clear_error() {
    // A port nothing listens on.
    let address = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let output = topic(&address, &["list"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("cannot reach the cluster at {address}")),
        "{stderr}"
    );
}

#[test]
fn cluster_status_shows_the_quorum_of_one() {
    let server = Server::start(&[]);
    server.topic_ok(&["create", "status-topic", "--partitions", "2"]);
    let (stdout, _) = server.ok("cluster", &["status"]);
    assert!(stdout.contains("LeaderId:               1\n"), "{stdout}");
    assert!(stdout.contains("LeaderEpoch:            1\n"), "{stdout}");
    assert!(stdout.contains("CurrentVoters:          [1]\n"), "{stdout}");
    assert!(stdout.contains("CurrentObservers:       []\n"), "{stdout}");
    let high_watermark: i64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("HighWatermark:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Bootstrap (2 records), the registration, the topic and its 2 partitions.
    assert!(high_watermark >= 6, "{stdout}");
    let leader_row = stdout.lines().find(|l| l.ends_with("\tLeader")).unwrap();
    let columns: Vec<&str> = leader_row.split('\t').collect();
    assert_eq!(columns[0], "1");
    assert_eq!(
        columns[2],
        high_watermark.to_string(),
        "the leader's log end"
    );
    assert_eq!(columns[3], "0", "no lag");
}

#[test]
fn alter_config_sets_and_deletes_topic_overrides() {
    let server = Server::start(&[]);
    server.topic_ok(&["create", "orders", "--partitions", "1"]);
    let defaults = topic_configs(&server, "orders");
    let default_retention = defaults["retention.ms"].clone();
    assert_ne!(default_retention.1, ConfigSource::DynamicTopicConfig);
    assert_ne!(default_retention.0.as_deref(), Some("86400000"));
    assert_eq!(defaults["cleanup.policy"].0.as_deref(), Some("delete"));

    let altered = server.topic_ok(&[
        "alter-config",
        "--topic",
        "orders",
        "--set",
        "retention.ms=86400000",
        "--set",
        "cleanup.policy=compact",
    ]);
    assert_eq!(altered, "Completed updating config for topic orders.\n");
    let configs = topic_configs(&server, "orders");
    let topic_override = |value: &str| (Some(value.to_string()), ConfigSource::DynamicTopicConfig);
    assert_eq!(configs["retention.ms"], topic_override("86400000"));
    assert_eq!(configs["cleanup.policy"], topic_override("compact"));
    let described = described_configs(&server, "orders");
    assert_eq!(described["retention.ms"], "86400000", "{described:?}");
    assert_eq!(described["cleanup.policy"], "compact", "{described:?}");

    // --delete removes the override: the broker's value and source come back, the other
    // override stays.
    let deleted = server.topic_ok(&[
        "alter-config",
        "--topic",
        "orders",
        "--delete",
        "retention.ms",
    ]);
    assert_eq!(deleted, "Completed updating config for topic orders.\n");
    let configs = topic_configs(&server, "orders");
    assert_eq!(configs["retention.ms"], default_retention);
    assert_eq!(configs["cleanup.policy"], topic_override("compact"));
    let described = described_configs(&server, "orders");
    assert_ne!(
        described.get("retention.ms").map(String::as_str),
        Some("86400000"),
        "{described:?}"
    );
    assert_eq!(described["cleanup.policy"], "compact", "{described:?}");

    // Set and delete in one request.
    server.topic_ok(&[
        "alter-config",
        "--topic",
        "orders",
        "--set",
        "segment.ms=3600000",
        "--delete",
        "cleanup.policy",
    ]);
    let configs = topic_configs(&server, "orders");
    assert_eq!(configs["segment.ms"], topic_override("3600000"));
    assert_eq!(configs["cleanup.policy"], defaults["cleanup.policy"]);

    // --validate-only checks and changes nothing.
    let validated = server.topic_ok(&[
        "alter-config",
        "--topic",
        "orders",
        "--set",
        "retention.ms=1000",
        "--validate-only",
    ]);
    assert_eq!(
        validated,
        "Validated the config changes for topic orders; nothing was changed.\n"
    );
    assert_eq!(topic_configs(&server, "orders"), configs);
}

#[test]
fn invalid_config_changes_are_refused_and_change_nothing() {
    let server = Server::start(&[]);
    server.topic_ok(&["create", "orders", "--config", "retention.ms=86400000"]);
    let before = topic_configs(&server, "orders");
    assert_eq!(
        before["retention.ms"],
        (
            Some("86400000".to_string()),
            ConfigSource::DynamicTopicConfig
        )
    );
    let refused = "cannot alter the config of topic 'orders'";
    let cases: [(&[&str], &[&str]); 8] = [
        (
            &["--topic", "orders", "--set", "retention.ms=abc"],
            &[
                refused,
                "Invalid value abc for configuration retention.ms",
                "(INVALID_CONFIG)",
            ],
        ),
        (
            &["--topic", "orders", "--set", "no.such.config=1"],
            &[refused, "no.such.config", "(INVALID_CONFIG)"],
        ),
        (
            &["--topic", "orders", "--set", "cleanup.policy=sometimes"],
            &[refused, "sometimes", "(INVALID_CONFIG)"],
        ),
        // All of a topic's changes or none: the valid one is not applied either.
        (
            &[
                "--topic",
                "orders",
                "--set",
                "cleanup.policy=compact",
                "--set",
                "retention.ms=abc",
            ],
            &[refused, "(INVALID_CONFIG)"],
        ),
        (
            &[
                "--topic",
                "orders",
                "--set",
                "retention.ms=abc",
                "--validate-only",
            ],
            &[refused, "(INVALID_CONFIG)"],
        ),
        (
            &["--topic", "missing", "--set", "retention.ms=1000"],
            &["topic 'missing' does not exist (UNKNOWN_TOPIC_OR_PARTITION)"],
        ),
        (
            &["--topic", "orders", "--set", "retention.ms"],
            &["--set expects key=value, got 'retention.ms'"],
        ),
        (&["--topic", "orders"], &["--set", "--delete"]),
    ];
    for (args, expected) in cases {
        let args = [&["alter-config"], args].concat();
        let stderr = server.fails("topic", &args);
        for expected in expected {
            assert!(stderr.contains(expected), "{args:?}: {stderr}");
        }
        assert_eq!(topic_configs(&server, "orders"), before, "{args:?}");
    }
}

#[test]
fn add_partitions_grows_a_topic_and_never_shrinks_it() {
    let server = Server::start(&[]);
    server.topic_ok(&["create", "events", "--partitions", "1"]);
    assert_eq!(described_partition_count(&server, "events"), 1);

    let validated = server.topic_ok(&[
        "add-partitions",
        "--topic",
        "events",
        "--partitions",
        "3",
        "--validate-only",
    ]);
    assert_eq!(
        validated,
        "Topic events can grow to 3 partitions; nothing was changed.\n"
    );
    assert_eq!(described_partition_count(&server, "events"), 1);

    let grown = server.topic_ok(&["add-partitions", "--topic", "events", "--partitions", "3"]);
    assert_eq!(grown, "Topic events now has 3 partitions.\n");
    assert_eq!(described_partition_count(&server, "events"), 3);

    let refused = "cannot add partitions to topic 'events'";
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["--topic", "events", "--partitions", "2"],
            &[refused, "currently has 3 partition", "(INVALID_PARTITIONS)"],
        ),
        (
            &["--topic", "events", "--partitions", "3"],
            &[refused, "(INVALID_PARTITIONS)"],
        ),
        (
            &["--topic", "events", "--partitions", "2", "--validate-only"],
            &[refused, "(INVALID_PARTITIONS)"],
        ),
        (
            &["--topic", "missing", "--partitions", "2"],
            &["topic 'missing' does not exist (UNKNOWN_TOPIC_OR_PARTITION)"],
        ),
    ];
    for (args, expected) in cases {
        let args = [&["add-partitions"], args].concat();
        let stderr = server.fails("topic", &args);
        for expected in expected {
            assert!(stderr.contains(expected), "{args:?}: {stderr}");
        }
        assert_eq!(described_partition_count(&server, "events"), 3, "{args:?}");
    }
}
