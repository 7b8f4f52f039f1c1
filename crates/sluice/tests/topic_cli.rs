//! `sluice topic` against a real `sluice server`, as an operator uses them: create, list,
//! describe and delete topics over the wire, with `kafka-topics.sh`'s output and Kafka's
//! error names when the cluster refuses.

mod cli;

use std::process::Output;

use cli::Server;

impl Server {
    /// Runs a `sluice topic` command that must succeed; returns its stdout.
    fn topic_ok(&self, args: &[&str]) -> String {
        self.ok("topic", args).0
    }
}

fn topic(bootstrap: &str, args: &[&str]) -> Output {
    cli::run("topic", bootstrap, args)
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
