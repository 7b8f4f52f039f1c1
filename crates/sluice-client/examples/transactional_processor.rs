//! The guide's exactly-once consume-transform-produce loop, with Sluice's client: a
//! read_committed consumer in a group (no auto-commit), a transactional producer, and per
//! poll one transaction that writes the transformed records and commits the consumed
//! offsets with them (`send_offsets_to_transaction` with the consumer's group metadata).
//!
//! ```text
//! cargo run -p sluice-client --example transactional_processor -- \
//!     BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID INSTANCE_ID HOLD_AT
//! ```
//!
//! It speaks the line protocol of `compat/txn/TxnJava.java`'s Java processor, so the same
//! driver kills, restarts and checks either: it prints `ready` once the producer is
//! initialised, `committed N COUNT` / `aborted N deliberate|<error>` per transaction,
//! `holding N COUNT` when it reaches transaction `HOLD_AT` (it then keeps that transaction
//! open, its records and offsets sent, until it is killed), `fatal <error>` before exiting
//! 3 on a fatal error, and `closed` when stdin is closed (it then finishes the current
//! transaction and exits). Every 5th transaction is aborted on purpose. Values become
//! `t(<value>)`, keys are kept. `-1` for `HOLD_AT` never holds.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Producer, ProducerConfig, ProducerError, ProducerRecord};
use sluice_client::{OffsetAndMetadata, TopicPartition};

const ABORT_EVERY: u64 = 5;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [bootstrap, input, output, group, txn_id, instance, hold_at] = args.as_slice() else {
        anyhow::bail!(
            "usage: transactional_processor BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID INSTANCE_ID HOLD_AT"
        );
    };
    let hold_at: i64 = hold_at.parse().context("HOLD_AT")?;
    // stdin closed: finish the current transaction and stop.
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            stop.store(true, Ordering::SeqCst);
        });
    }
    let producer = Producer::connect(ProducerConfig::from_iter([
        ("bootstrap.servers", bootstrap.as_str()),
        ("transactional.id", txn_id.as_str()),
        ("transaction.timeout.ms", "10000"),
        ("linger.ms", "5"),
        ("request.timeout.ms", "10000"),
        ("delivery.timeout.ms", "30000"),
    ])?)
    .await?;
    let mut consumer = Consumer::new(ConsumerConfig::from_map([
        ("bootstrap.servers", bootstrap.as_str()),
        ("group.id", group.as_str()),
        ("isolation.level", "read_committed"),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", "earliest"),
        // Static membership: a restarted processor takes its killed predecessor's place
        // at once instead of after the session timeout.
        ("group.instance.id", instance.as_str()),
        ("session.timeout.ms", "10000"),
        ("heartbeat.interval.ms", "1000"),
        ("max.poll.records", "50"),
        ("fetch.max.wait.ms", "100"),
        ("request.timeout.ms", "10000"),
    ])?)
    .await?;
    producer.init_transactions().await?;
    say("ready");
    consumer.subscribe([input.clone()], None)?;
    let mut txn: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        let records = consumer.poll(Duration::from_millis(100)).await?;
        if records.is_empty() {
            continue;
        }
        txn += 1;
        producer.begin_transaction()?;
        let result: Result<bool, ProducerError> = async {
            let mut deliveries = Vec::with_capacity(records.len());
            let mut offsets: BTreeMap<TopicPartition, OffsetAndMetadata> = BTreeMap::new();
            for record in &records {
                let value = format!(
                    "t({})",
                    String::from_utf8_lossy(record.value.as_deref().unwrap_or_default())
                );
                let mut out = ProducerRecord::new(output.clone(), value);
                if let Some(key) = &record.key {
                    out = out.with_key(key.clone());
                }
                deliveries.push(producer.send(out).await?);
                offsets.insert(
                    TopicPartition::new(record.topic.clone(), record.partition),
                    OffsetAndMetadata {
                        offset: record.offset + 1,
                        leader_epoch: record.leader_epoch,
                        metadata: String::new(),
                    },
                );
            }
            let metadata = consumer
                .group_metadata()
                .expect("a subscribed consumer has group metadata");
            producer
                .send_offsets_to_transaction(&offsets, &metadata)
                .await?;
            if txn as i64 == hold_at {
                // Leave this transaction open (records and offsets sent) until killed.
                producer.flush().await?;
                say(&format!("holding {txn} {}", records.len()));
                tokio::time::sleep(Duration::from_secs(600)).await;
            }
            if txn.is_multiple_of(ABORT_EVERY) {
                return Ok(false);
            }
            producer.commit_transaction().await?;
            drop(deliveries);
            Ok(true)
        }
        .await;
        match result {
            Ok(true) => say(&format!("committed {txn} {}", records.len())),
            Err(error) if error.is_fatal() => {
                say(&format!("fatal {error}"));
                std::process::exit(3);
            }
            Ok(false) | Err(_) => {
                let why = match &result {
                    Err(error) => error.to_string(),
                    _ => "deliberate".to_string(),
                };
                producer.abort_transaction().await?;
                // The fix the guide's loop needs: after an abort the consumer's position
                // is past the aborted transaction's inputs, so the next poll would skip
                // them and their outputs would never be written. Seek every assigned
                // partition back to its committed offset.
                let assigned: Vec<TopicPartition> = consumer.assignment().into_iter().collect();
                let committed = consumer.committed(&assigned).await?;
                for partition in &assigned {
                    match committed.get(partition) {
                        Some(offset) => consumer.seek(partition, offset.offset)?,
                        None => consumer.seek_to_beginning(std::slice::from_ref(partition))?,
                    }
                }
                say(&format!("aborted {txn} {why}"));
            }
        }
    }
    consumer.close().await?;
    producer.close().await?;
    say("closed");
    Ok(())
}
