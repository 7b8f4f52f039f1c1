//! What the CDC tests share: reading a topic's change events back as JSON.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use serde_json::Value;
use sluice_client::TopicPartition;
use sluice_client::consumer::{Consumer, ConsumerConfig};

use crate::common::TestNode;

/// Every record of a topic's partition 0 as (key, value) JSON (null for a tombstone or
/// a raw string value that is not JSON), once `done` holds for what was read (or 30 s
/// passed), plus anything that follows within a quiet half second.
pub async fn read_until(
    node: &TestNode,
    topic: &str,
    done: impl Fn(&[(Value, Value)]) -> bool,
) -> Vec<(Value, Value)> {
    let mut consumer = from_the_start(node, topic).await;
    let json = |b: Option<bytes::Bytes>| match b {
        Some(b) if !b.is_empty() => serde_json::from_slice(&b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    let mut records = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(&records) && Instant::now() < deadline {
        for r in consumer
            .poll(Duration::from_millis(200))
            .await
            .unwrap_or_default()
        {
            records.push((json(r.key), json(r.value)));
        }
    }
    for r in consumer
        .poll(Duration::from_millis(500))
        .await
        .unwrap_or_default()
    {
        records.push((json(r.key), json(r.value)));
    }
    records
}

/// The first `count` values of a topic's partition 0 as written (fewer if 30 s pass).
pub async fn raw_values(node: &TestNode, topic: &str, count: usize) -> Vec<bytes::Bytes> {
    let mut consumer = from_the_start(node, topic).await;
    let mut values = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while values.len() < count && Instant::now() < deadline {
        for record in consumer
            .poll(Duration::from_millis(200))
            .await
            .unwrap_or_default()
        {
            values.extend(record.value);
        }
    }
    values
}

/// A consumer assigned to partition 0 of `topic`, at offset 0.
async fn from_the_start(node: &TestNode, topic: &str) -> Consumer {
    let mut config = ConsumerConfig::new([node.address.to_string()]);
    config.set("auto.offset.reset", "earliest").unwrap();
    let mut consumer = Consumer::new(config).await.unwrap();
    let tp = TopicPartition::new(topic, 0);
    consumer.assign([tp.clone()]).unwrap();
    consumer.seek(&tp, 0).unwrap();
    consumer
}

/// Each record's `op`, `tombstone` for a null value.
pub fn ops(records: &[(Value, Value)]) -> Vec<String> {
    records
        .iter()
        .map(|(_, v)| match v {
            Value::Null => "tombstone".to_string(),
            v => v["op"].as_str().unwrap_or("?").to_string(),
        })
        .collect()
}
