//! Sluice's Avro serializer and deserializer from the command line, as the registry compat
//! suite (`compat/registry/rust_serde_check.py`) drives them against Confluent's Python
//! ones: each side must read what the other wrote.
//!
//! ```text
//! registry_serde avro-produce --bootstrap B --registry URL --topic T --schema FILE --count N
//!     Reads N JSON lines on stdin, writes each as an Avro record of FILE's schema to
//!     partition 0 of T in Confluent's wire format (the schema auto-registered under
//!     T-value), waits for every acknowledgement and prints `produced N`.
//! registry_serde avro-consume --bootstrap B --registry URL --topic T --count N
//!     Assigns partition 0 of T, seeks to offset 0, and prints the first N record values
//!     decoded, one JSON line each (unions unwrapped: a nullable string is the string or
//!     null). Exits 1 if N records did not arrive within --timeout-ms (default 30000).
//! ```

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use sluice_client::TopicPartition;
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_registry::client::SchemaRegistryClient;
use sluice_registry::serde::TopicNameStrategy;
use sluice_registry::serde::avro::{AvroDeserializer, AvroSerializer};

const USAGE: &str = "usage: registry_serde avro-produce --bootstrap B --registry URL --topic T \
                     --schema FILE --count N\n       registry_serde avro-consume --bootstrap B \
                     --registry URL --topic T --count N [--timeout-ms MS]";

/// The partition both modes use: the compat suite creates single-partition topics, and a
/// fixed partition keeps the order records are written in.
const PARTITION: i32 = 0;

/// `--name value` options.
struct Options(HashMap<String, String>);

impl Options {
    fn parse(args: impl Iterator<Item = String>) -> anyhow::Result<Options> {
        let mut options = HashMap::new();
        let mut args = args.peekable();
        while let Some(arg) = args.next() {
            let Some(name) = arg.strip_prefix("--") else {
                bail!("unexpected argument {arg}");
            };
            let value = args
                .next()
                .with_context(|| format!("--{name} needs a value"))?;
            options.insert(name.to_string(), value);
        }
        Ok(Options(options))
    }

    fn get(&self, name: &str) -> anyhow::Result<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .with_context(|| format!("--{name} is required"))
    }

    fn number(&self, name: &str) -> anyhow::Result<u64> {
        let value = self.get(name)?;
        value
            .parse()
            .with_context(|| format!("--{name} {value}: not a number"))
    }
}

async fn avro_produce(options: &Options) -> anyhow::Result<()> {
    let topic = options.get("topic")?;
    let count = options.number("count")?;
    let schema_file = options.get("schema")?;
    let schema =
        std::fs::read_to_string(schema_file).with_context(|| format!("reading {schema_file}"))?;
    let client = SchemaRegistryClient::from_url(options.get("registry")?)?;
    let serializer = AvroSerializer::new(client, &schema, TopicNameStrategy, false)?;

    let mut payloads = Vec::new();
    for (number, line) in std::io::stdin().lock().lines().enumerate() {
        if payloads.len() as u64 == count {
            break;
        }
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("stdin line {}", number + 1))?;
        let payload = serializer
            .serialize_json(topic, &value)
            .await
            .with_context(|| format!("stdin line {}", number + 1))?;
        payloads.push(payload);
    }
    if (payloads.len() as u64) < count {
        bail!(
            "{count} records asked, {} JSON lines on stdin",
            payloads.len()
        );
    }

    let config = ProducerConfig::from_iter([
        ("bootstrap.servers", options.get("bootstrap")?),
        ("acks", "all"),
    ])?;
    let producer = Producer::connect(config).await?;
    let mut deliveries = Vec::with_capacity(payloads.len());
    for payload in payloads {
        let record = ProducerRecord::new(topic, payload).with_partition(PARTITION);
        deliveries.push(producer.send(record).await?);
    }
    producer.flush().await?;
    for (index, delivery) in deliveries.into_iter().enumerate() {
        delivery
            .await
            .with_context(|| format!("record {index} was not acknowledged"))?;
    }
    producer.close().await?;
    println!("produced {count}");
    Ok(())
}

async fn avro_consume(options: &Options) -> anyhow::Result<bool> {
    let topic = options.get("topic")?;
    let count = options.number("count")?;
    let timeout = Duration::from_millis(match options.0.get("timeout-ms") {
        Some(_) => options.number("timeout-ms")?,
        None => 30_000,
    });
    let client = SchemaRegistryClient::from_url(options.get("registry")?)?;
    let deserializer = AvroDeserializer::new(client);
    let config = ConsumerConfig::from_map([
        ("bootstrap.servers", options.get("bootstrap")?),
        ("enable.auto.commit", "false"),
    ])?;
    let mut consumer = Consumer::new(config).await?;
    let partition = TopicPartition::new(topic.to_string(), PARTITION);
    consumer.assign([partition.clone()])?;
    consumer.seek(&partition, 0)?;

    let deadline = Instant::now() + timeout;
    let mut printed = 0u64;
    let mut out = std::io::stdout().lock();
    while printed < count && Instant::now() < deadline {
        for record in consumer.poll(Duration::from_millis(500)).await? {
            if printed == count {
                break;
            }
            let Some(value) = record.value else {
                bail!("offset {}: a null value", record.offset);
            };
            let decoded = deserializer
                .deserialize_json(&value)
                .await
                .with_context(|| format!("offset {}", record.offset))?;
            writeln!(out, "{decoded}")?;
            printed += 1;
        }
    }
    out.flush()?;
    consumer.close().await?;
    if printed < count {
        eprintln!("registry_serde: {printed} of {count} records within {timeout:?}");
        return Ok(false);
    }
    Ok(true)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let options = match Options::parse(args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("registry_serde: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let ok = match mode.as_str() {
        "avro-produce" => avro_produce(&options).await.map(|()| true)?,
        "avro-consume" => avro_consume(&options).await?,
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
