//! Writes a metadata log as Sluice will, for Kafka's own decoder to judge
//! (`compat/run.sh`): `<out>/__cluster_metadata-0/` holding the records of Kafka 4.1.1's
//! captured example (feature levels, a topic with configs and partitions, a removed topic,
//! a config change, partition changes, no-ops), and `<out>/expected.txt`: the payload
//! Kafka's `DumpLogSegments --cluster-metadata-decoder` printed for each of them in that
//! capture (docs/design/kraft-metadata-records.md, section 9).
//!
//! Usage: `cargo run -p sluice-metadata --example metadata_log_sample -- <out>`

use bytes::Bytes;
use sluice_metadata::{
    ConfigRecord, MetadataRecord, PartitionChangeRecord, PartitionRecord, TopicRecord,
};
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};
use sluice_storage::{LogConfig, LogManager, TopicId, TopicPartition};

fn id(base64: &str) -> [u8; 16] {
    TopicId::from_base64(base64).expect("a valid id").0
}

fn main() {
    let out = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: metadata_log_sample <out>"),
    );
    let orders = id("BYQFmDxQS8WWwXJG5cvlyA");
    let scratch = id("tDGYpWqaQb2q14K1sipY4A");
    let directory = id("_p4W9a37WrHVE07BPs2jMQ");
    let partition = |topic_id, partition_id| {
        MetadataRecord::Partition(PartitionRecord::new_partition(
            topic_id,
            partition_id,
            vec![1],
            vec![directory],
        ))
    };
    let config = |name: &str, value: Option<&str>| {
        MetadataRecord::Config(ConfigRecord {
            resource_type: 2,
            resource_name: "orders".into(),
            name: name.into(),
            value: value.map(str::to_string),
        })
    };
    let change = |partition_id| {
        let mut change = PartitionChangeRecord::new(orders, partition_id);
        change.isr = Some(vec![]);
        change.leader = -1;
        change.eligible_leader_replicas = Some(vec![1]);
        change.last_known_elr = Some(vec![1]);
        MetadataRecord::PartitionChange(change)
    };
    let partition_json = |topic: &str, p: i32| {
        format!(
            r#"{{"type":"PARTITION_RECORD","version":2,"data":{{"partitionId":{p},"topicId":"{topic}","replicas":[1],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0,"directories":["_p4W9a37WrHVE07BPs2jMQ"]}}}}"#
        )
    };
    let change_json = |p: i32| {
        format!(
            r#"{{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{{"partitionId":{p},"topicId":"BYQFmDxQS8WWwXJG5cvlyA","isr":[],"leader":-1,"eligibleLeaderReplicas":[1],"lastKnownElr":[1]}}}}"#
        )
    };
    // Batches as the controller wrote them, each record with Kafka's printed payload.
    let batches: Vec<Vec<(MetadataRecord, String)>> = vec![
        vec![
            (MetadataRecord::FeatureLevel { name: "metadata.version".into(), level: 27 }, r#"{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":27}}"#.into()),
            (MetadataRecord::FeatureLevel { name: "group.version".into(), level: 1 }, r#"{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"group.version","featureLevel":1}}"#.into()),
        ],
        vec![(MetadataRecord::NoOp, r#"{"type":"NO_OP_RECORD","version":0,"data":{}}"#.into())],
        vec![
            (MetadataRecord::Topic(TopicRecord { name: "orders".into(), topic_id: orders }), r#"{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"BYQFmDxQS8WWwXJG5cvlyA"}}"#.into()),
            (config("cleanup.policy", Some("compact")), r#"{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"orders","name":"cleanup.policy","value":"compact"}}"#.into()),
            (config("retention.ms", Some("86400000")), r#"{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"orders","name":"retention.ms","value":"86400000"}}"#.into()),
            (partition(orders, 0), partition_json("BYQFmDxQS8WWwXJG5cvlyA", 0)),
            (partition(orders, 1), partition_json("BYQFmDxQS8WWwXJG5cvlyA", 1)),
            (partition(orders, 2), partition_json("BYQFmDxQS8WWwXJG5cvlyA", 2)),
        ],
        vec![
            (MetadataRecord::Topic(TopicRecord { name: "scratch".into(), topic_id: scratch }), r#"{"type":"TOPIC_RECORD","version":0,"data":{"name":"scratch","topicId":"tDGYpWqaQb2q14K1sipY4A"}}"#.into()),
            (partition(scratch, 0), partition_json("tDGYpWqaQb2q14K1sipY4A", 0)),
        ],
        vec![(MetadataRecord::RemoveTopic { topic_id: scratch }, r#"{"type":"REMOVE_TOPIC_RECORD","version":0,"data":{"topicId":"tDGYpWqaQb2q14K1sipY4A"}}"#.into())],
        vec![
            (config("max.message.bytes", Some("2097152")), r#"{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"orders","name":"max.message.bytes","value":"2097152"}}"#.into()),
            (config("retention.ms", None), r#"{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"orders","name":"retention.ms","value":null}}"#.into()),
        ],
        vec![(change(0), change_json(0)), (change(1), change_json(1)), (change(2), change_json(2))],
    ];
    let mut manager = LogManager::open(&out, LogConfig::default()).expect("open the log dir");
    let log = manager
        .get_or_create(&TopicPartition::new("__cluster_metadata", 0), None, None)
        .expect("create the metadata log");
    let mut log = sluice_storage::lock(&log);
    let mut expected = String::new();
    for batch in &batches {
        let mut builder = RecordBatchBuilder::new(Compression::None);
        for (record, json) in batch {
            let value = record.encode(record.latest_version()).expect("encodes");
            // Round trip through Sluice's own decoder too.
            let (decoded, _) = MetadataRecord::decode(&value).expect("decodes");
            assert_eq!(&decoded, record);
            builder
                .append(&NewRecord {
                    timestamp: 1_795_968_139_529,
                    key: None,
                    value: Some(Bytes::from(value)),
                    headers: vec![],
                })
                .expect("a metadata record fits a batch");
            expected.push_str(json);
            expected.push('\n');
        }
        let mut bytes = builder.build().to_vec();
        log.append_as_leader(&mut bytes, 1, 1_795_968_139_529)
            .expect("append");
    }
    drop(log);
    manager.shutdown().expect("clean shutdown");
    std::fs::write(out.join("expected.txt"), expected).expect("write expected.txt");
}
