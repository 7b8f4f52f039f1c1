//! `sluice produce`: records from stdin, one a line, for people who reach for `kcat -P`
//! or `kafka-console-producer.sh`. Built on `sluice-client`'s producer, so it batches,
//! compresses and retries (idempotently) as any application using it would.
//!
//! Each line (without its newline) is a record's value; `-k` gives every record the same
//! key; `--key-separator SEP` splits each line at the first `SEP` into key and value (a
//! line without it has no key, as kcat's `-K`). `-H name=value` adds a header to every
//! record, `-p` picks the partition. `-X key=value` passes any of the producer's Kafka
//! settings (`linger.ms`, `enable.idempotence`, ...). The command exits 0 once every
//! record was acknowledged, and 1 (after printing each failure) otherwise.

use std::collections::BTreeMap;
use std::io::BufRead;

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::Args;
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};

#[derive(Args, Debug)]
pub struct ProduceArgs {
    /// The topic to write to.
    topic: String,
    /// The cluster's `host:port` addresses, comma-separated.
    #[arg(
        short = 'b',
        long = "bootstrap-server",
        default_value = "127.0.0.1:9092",
        value_delimiter = ','
    )]
    bootstrap: Vec<String>,
    /// The key of every record.
    #[arg(short = 'k', long, conflicts_with = "key_separator")]
    key: Option<String>,
    /// Split each line at the first occurrence of this into key and value.
    #[arg(short = 'K', long)]
    key_separator: Option<String>,
    /// A header `name=value` on every record; repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME=VALUE")]
    headers: Vec<String>,
    /// The partition (default: the partitioner's choice: murmur2 of the key, else sticky).
    #[arg(short = 'p', long)]
    partition: Option<i32>,
    /// `all` (-1, the default), `1` (the leader) or `0` (no answer) — Kafka's `acks`.
    #[arg(long)]
    acks: Option<String>,
    /// `none`, `gzip`, `snappy`, `lz4` or `zstd` — Kafka's `compression.type`.
    #[arg(short = 'z', long)]
    compression: Option<String>,
    /// A producer setting `key=value` (Kafka's keys); repeatable.
    #[arg(short = 'X', value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

fn split_setting<'a>(text: &'a str, flag: &str) -> anyhow::Result<(&'a str, &'a str)> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key, value)),
        _ => bail!("{flag} expects name=value, got '{text}'"),
    }
}

/// The producer's settings: `-X` first, then the dedicated flags.
fn settings(args: &ProduceArgs) -> anyhow::Result<BTreeMap<String, String>> {
    let mut settings = BTreeMap::new();
    settings.insert("bootstrap.servers".to_string(), args.bootstrap.join(","));
    settings.insert("client.id".to_string(), "sluice-produce".to_string());
    for setting in &args.settings {
        let (key, value) = split_setting(setting, "-X")?;
        settings.insert(key.to_string(), value.to_string());
    }
    if let Some(acks) = &args.acks {
        settings.insert("acks".to_string(), acks.clone());
    }
    if let Some(codec) = &args.compression {
        settings.insert("compression.type".to_string(), codec.clone());
    }
    Ok(settings)
}

pub fn run(args: ProduceArgs) -> anyhow::Result<()> {
    let config =
        ProducerConfig::from_map(&settings(&args)?).context("invalid producer settings")?;
    let headers = args
        .headers
        .iter()
        .map(|h| split_setting(h, "-H").map(|(n, v)| (n.to_string(), v.to_string())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let producer = Producer::connect(config)
            .await
            .with_context(|| format!("cannot reach the cluster at {}", args.bootstrap.join(",")))?;
        let stdin = std::io::stdin();
        let mut deliveries = Vec::new();
        for (number, line) in stdin.lock().lines().enumerate() {
            let line = line.context("reading stdin")?;
            let (key, value) = match &args.key_separator {
                Some(separator) => match line.split_once(separator.as_str()) {
                    Some((key, value)) => (Some(key.to_string()), value.to_string()),
                    None => (None, line),
                },
                None => (args.key.clone(), line),
            };
            let mut record = ProducerRecord::new(args.topic.clone(), value);
            if let Some(key) = key {
                record = record.with_key(key);
            }
            if let Some(partition) = args.partition {
                record = record.with_partition(partition);
            }
            for (name, value) in &headers {
                record = record.with_header(name.clone(), Some(Bytes::from(value.clone())));
            }
            let delivery = producer
                .send(record)
                .await
                .with_context(|| format!("line {}: cannot send", number + 1))?;
            deliveries.push((number + 1, delivery));
        }
        producer.flush().await.context("flushing")?;
        let mut failed = 0;
        for (line, delivery) in deliveries {
            if let Err(error) = delivery.await {
                eprintln!("sluice produce: line {line}: {error}");
                failed += 1;
            }
        }
        producer.close().await.context("closing the producer")?;
        if failed > 0 {
            bail!("{failed} record(s) were not delivered");
        }
        Ok(())
    })
}
