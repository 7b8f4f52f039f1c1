//! `sluice produce` against a real `sluice server`: lines from stdin become records with
//! the key, headers, partition and codec asked for, read back with a Fetch.

mod cli;

use cli::Server;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use sluice_client::{Client, ClientConfig, Target};
use sluice_protocol::{Compression, batches};

/// A record as read back: (offset, key, value, headers, codec).
type Row = (
    i64,
    Option<String>,
    String,
    Vec<(String, String)>,
    Compression,
);

fn read(server: &Server, topic: &str, partition: i32) -> Vec<Row> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = Client::connect(ClientConfig::new([server.address.clone()]))
            .await
            .unwrap();
        let response = client
            .send(Target::Any, |_| {
                FetchRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_max_bytes(1 << 20)
                    .with_topics(vec![
                        FetchTopic::default()
                            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                            .with_partitions(vec![
                                FetchPartition::default()
                                    .with_partition(partition)
                                    .with_fetch_offset(0)
                                    .with_partition_max_bytes(1 << 20),
                            ]),
                    ])
            })
            .await
            .unwrap();
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        let mut rows = Vec::new();
        let records = response.responses[0].partitions[0]
            .records
            .clone()
            .unwrap_or_default();
        for batch in batches(records) {
            let batch = batch.unwrap();
            for record in batch.records().unwrap() {
                let record = record.unwrap();
                rows.push((
                    batch.base_offset() + i64::from(record.offset_delta),
                    record.key.as_deref().map(text),
                    text(record.value.as_deref().unwrap()),
                    record
                        .headers
                        .iter()
                        .map(|h| (text(&h.key), text(h.value.as_deref().unwrap())))
                        .collect(),
                    batch.compression().unwrap(),
                ));
            }
        }
        rows
    })
}

#[test]
fn lines_become_records_with_keys_headers_partition_and_codec() {
    let server = Server::start(&[]);
    server.ok("topic", &["create", "lines", "--partitions", "3"]);
    let output = server.run_input(
        "produce",
        &[
            "lines",
            "--key-separator",
            ":",
            "-H",
            "source=test",
            "-p",
            "2",
            "--compression",
            "gzip",
            "-X",
            "linger.ms=50",
        ],
        "k1:v1\nk2:v2:with:colons\nno key here\n",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let header = vec![("source".to_string(), "test".to_string())];
    assert_eq!(
        read(&server, "lines", 2),
        vec![
            (
                0,
                Some("k1".into()),
                "v1".into(),
                header.clone(),
                Compression::Gzip
            ),
            (
                1,
                Some("k2".into()),
                "v2:with:colons".into(),
                header.clone(),
                Compression::Gzip
            ),
            (2, None, "no key here".into(), header, Compression::Gzip),
        ]
    );
    assert!(read(&server, "lines", 0).is_empty());
    // One key for every line, acks=1: murmur2 sends them all to one partition.
    let output = server.run_input("produce", &["lines", "-k", "same", "--acks", "1"], "a\nb\n");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let keyed: Vec<Row> = (0..3).flat_map(|p| read(&server, "lines", p)).collect();
    let same: Vec<&Row> = keyed
        .iter()
        .filter(|r| r.1.as_deref() == Some("same"))
        .collect();
    assert_eq!(same.len(), 2);
}

#[test]
fn bad_settings_and_failed_deliveries_exit_nonzero() {
    let server = Server::start(&["auto.create.topics.enable=false"]);
    let output = server.run_input("produce", &["t", "-X", "linger.ms=soon"], "x\n");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("linger.ms"), "{stderr}");
    let output = server.run_input("produce", &["t", "-H", "novalue"], "x\n");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("name=value"));
    // A topic that does not exist (and is not created): the record is not delivered.
    let output = server.run_input(
        "produce",
        &[
            "missing",
            "-X",
            "max.block.ms=1000",
            "-X",
            "delivery.timeout.ms=1500",
            "-X",
            "request.timeout.ms=1000",
            "-X",
            "linger.ms=0",
        ],
        "x\n",
    );
    assert!(!output.status.success());
}
