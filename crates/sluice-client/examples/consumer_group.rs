//! A consumer group member: joins GROUP for TOPIC, prints each record and its lag, and
//! commits after each poll. Start several to watch the group split the partitions (the
//! rebalance listener prints what each member gives up and gets).
//!
//! ```text
//! cargo run -p sluice-client --example consumer_group -- 127.0.0.1:9092 demo my-group
//! ```

use std::collections::BTreeSet;
use std::time::Duration;

use sluice_client::TopicPartition;
use sluice_client::consumer::{Consumer, ConsumerConfig, RebalanceListener};

struct Announce;

impl RebalanceListener for Announce {
    fn on_partitions_revoked(&mut self, partitions: &BTreeSet<TopicPartition>) {
        println!("revoked {partitions:?}");
    }
    fn on_partitions_assigned(&mut self, partitions: &BTreeSet<TopicPartition>) {
        println!("assigned {partitions:?}");
    }
    fn on_partitions_lost(&mut self, partitions: &BTreeSet<TopicPartition>) {
        println!("lost {partitions:?}");
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let bootstrap = args.next().unwrap_or_else(|| "127.0.0.1:9092".to_string());
    let topic = args.next().unwrap_or_else(|| "demo".to_string());
    let group = args.next().unwrap_or_else(|| "demo-group".to_string());
    let mut consumer = Consumer::new(ConsumerConfig::from_map([
        ("bootstrap.servers", bootstrap.as_str()),
        ("group.id", group.as_str()),
        ("auto.offset.reset", "earliest"),
        ("enable.auto.commit", "false"),
        ("partition.assignment.strategy", "cooperative-sticky"),
    ])?)
    .await?;
    consumer.subscribe([topic], Some(Box::new(Announce)))?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            records = consumer.poll(Duration::from_millis(500)) => {
                let records = records?;
                for record in &records {
                    let partition = TopicPartition::new(record.topic.clone(), record.partition);
                    println!(
                        "{}-{}@{} {} (lag {:?})",
                        record.topic,
                        record.partition,
                        record.offset,
                        String::from_utf8_lossy(record.value.as_deref().unwrap_or_default()),
                        consumer.lag(&partition)
                    );
                }
                if !records.is_empty() {
                    consumer.commit_sync().await?;
                }
            }
        }
    }
    consumer.close().await?;
    Ok(())
}
