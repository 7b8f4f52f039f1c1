//! What the group and transaction coordinators share about their internal topic
//! (`__consumer_offsets`, `__transaction_state`): which of its partitions this node leads,
//! waiting for this node's replica to become a partition's leader before loading it, and
//! reading a partition back from its log start to its end.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sluice_metadata::MetadataImage;
use sluice_protocol::{RecordBatch, batches};

use crate::broker::{Broker, Replica};

/// How long a coordinator waits for its replica to lead a partition it was given.
const LEADERSHIP_WAIT: Duration = Duration::from_secs(30);

/// The partitions of `topic` that `node_id` leads, with their leader epochs.
pub fn led_partitions(image: &MetadataImage, topic: &str, node_id: i32) -> HashMap<i32, i32> {
    image
        .topic(topic)
        .map(|t| {
            t.partitions
                .iter()
                .filter(|(_, p)| p.leader == node_id)
                .map(|(index, p)| (*index, p.leader_epoch))
                .collect()
        })
        .unwrap_or_default()
}

/// The partition of `topic` a coordinator key (a group id, a transactional id) belongs
/// to: Kafka's `abs(javaHash(key)) % partitions`. None while the topic does not exist.
pub fn partition_of(image: &MetadataImage, topic: &str, key: &str) -> Option<i32> {
    let partitions = image.topic(topic).map_or(0, |t| t.partitions.len() as i32);
    (partitions > 0).then(|| sluice_group::records::partition_for(key, partitions))
}

/// Waits until this node's replica of `topic`-`partition` leads it at `leader_epoch`
/// (the image is applied before the replica's role changes), while `current()` holds
/// (the shard was not replaced meanwhile). None when it stops holding or after 30 s.
pub async fn await_leadership(
    broker: &Broker,
    topic: &str,
    partition: i32,
    leader_epoch: i32,
    current: impl Fn() -> bool,
) -> Option<Arc<Replica>> {
    let started = std::time::Instant::now();
    loop {
        if !current() {
            return None;
        }
        if let Some(replica) = broker.replica(topic, partition)
            && replica.state().is_leader()
            && replica.leader_epoch() == leader_epoch
        {
            return Some(replica);
        }
        if started.elapsed() > LEADERSHIP_WAIT {
            tracing::warn!(
                topic,
                partition,
                "gave up loading a coordinator partition: the replica did not become leader"
            );
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads the replica's log from its start to its end, calling `apply` with every batch
/// once, in offset order.
pub fn replay(replica: &Replica, mut apply: impl FnMut(&RecordBatch)) -> Result<(), String> {
    let log = sluice_storage::lock(&replica.log);
    let end = log.log_end_offset();
    let mut offset = log.log_start_offset();
    while offset < end {
        let data = log
            .read(offset, 1 << 20, None, true)
            .map_err(|e| e.to_string())?;
        if data.records.is_empty() {
            break;
        }
        let mut next = offset;
        for batch in batches(data.records) {
            let batch = batch.map_err(|e| e.to_string())?;
            next = batch.next_offset();
            if batch.next_offset() > offset {
                apply(&batch);
            }
        }
        if next <= offset {
            break;
        }
        offset = next;
    }
    Ok(())
}
