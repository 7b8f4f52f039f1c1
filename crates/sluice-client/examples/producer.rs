//! Sends a few keyed records and prints where each landed.
//!
//! ```text
//! cargo run -p sluice-client --example producer -- 127.0.0.1:9092 demo
//! ```

use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let bootstrap = args.next().unwrap_or_else(|| "127.0.0.1:9092".to_string());
    let topic = args.next().unwrap_or_else(|| "demo".to_string());
    let config = ProducerConfig::from_iter([
        ("bootstrap.servers", bootstrap.as_str()),
        ("linger.ms", "10"),
        ("compression.type", "lz4"),
    ])?;
    let producer = Producer::connect(config).await?;
    let mut deliveries = Vec::new();
    for i in 0..10 {
        let record = ProducerRecord::new(&topic, format!("hello {i}")).with_key(format!("key-{i}"));
        deliveries.push(producer.send(record).await?);
    }
    for delivery in deliveries {
        let metadata = delivery.await?;
        println!(
            "partition {} offset {}",
            metadata.partition, metadata.offset
        );
    }
    producer.close().await?;
    Ok(())
}
