//! `sluice consume`: records to stdout, for people who reach for `kcat -C` or
//! `kafka-console-consumer.sh`. Built on `sluice-client`'s consumer.
//!
//! Without `-g` it reads every partition of the topic (or `-p` one) by assignment, from
//! `-o`: `beginning` (the default, as kcat), `end`, an offset, or `@<timestamp-ms>` (the
//! first record at or after that time, by ListOffsets). With `-g group` it joins the group
//! and starts where the group committed; `-o beginning|end` is then the
//! `auto.offset.reset` for partitions without a commit, and progress is committed as it
//! goes (auto-commit) and on exit. `-c N` stops after N records, `-e` once every partition
//! has been read to its end. `-f` formats each record as kcat's `-f` does:
//! `%t` topic, `%p` partition, `%o` offset, `%k` key, `%s` value, `%T` timestamp (ms),
//! `%h` headers (`name=value`, comma-separated), `%K`/`%S` key/value length (-1 when
//! null), `%%`, and `\n`, `\t`, `\\`; the default is `%s\n`. `-X key=value` passes any
//! consumer setting (`isolation.level=read_committed`, ...).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use sluice_client::consumer::{Consumer, ConsumerConfig, ConsumerRecord};
use sluice_client::{Admin, ClientConfig, OffsetSpec, TopicPartition};

#[derive(Args, Debug)]
pub struct ConsumeArgs {
    /// The topic to read.
    topic: String,
    /// The cluster's `host:port` addresses, comma-separated.
    #[arg(
        short = 'b',
        long = "bootstrap-server",
        default_value = "127.0.0.1:9092",
        value_delimiter = ','
    )]
    bootstrap: Vec<String>,
    /// Read as a member of this consumer group (committing its progress).
    #[arg(short = 'g', long)]
    group: Option<String>,
    /// Where to start: `beginning`, `end`, an offset, or `@<timestamp-ms>`.
    #[arg(
        short = 'o',
        long,
        default_value = "beginning",
        allow_hyphen_values = true
    )]
    offset: String,
    /// Only this partition (without `-g`).
    #[arg(short = 'p', long, conflicts_with = "group")]
    partition: Option<i32>,
    /// Stop after this many records.
    #[arg(short = 'c', long)]
    count: Option<u64>,
    /// Stop once every partition has been read to its end.
    #[arg(short = 'e', long = "exit")]
    exit_at_end: bool,
    /// The output format of each record (kcat's `-f`).
    #[arg(short = 'f', long, default_value = "%s\\n")]
    format: String,
    /// A consumer setting `key=value` (Kafka's keys); repeatable.
    #[arg(short = 'X', value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

/// Where to start reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Beginning,
    End,
    Offset(i64),
    Timestamp(i64),
}

fn parse_start(text: &str) -> anyhow::Result<Start> {
    Ok(match text {
        "beginning" => Start::Beginning,
        "end" => Start::End,
        _ => match text.strip_prefix('@') {
            Some(ms) => Start::Timestamp(
                ms.parse()
                    .with_context(|| format!("-o @{ms}: not a timestamp in ms"))?,
            ),
            None => match text.parse::<i64>() {
                Ok(offset) if offset >= 0 => Start::Offset(offset),
                _ => bail!("-o takes beginning, end, an offset or @<timestamp-ms>, not '{text}'"),
            },
        },
    })
}

/// Writes `record` as `format` says (kcat's `-f` tokens).
pub fn format_record(format: &str, record: &ConsumerRecord, out: &mut Vec<u8>) {
    let mut chars = format.chars().peekable();
    let bytes_or_empty = |b: &Option<bytes::Bytes>| b.as_deref().unwrap_or_default().to_vec();
    let length = |b: &Option<bytes::Bytes>| b.as_ref().map_or(-1, |b| b.len() as i64);
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('%', Some(token)) => {
                chars.next();
                match token {
                    't' => out.extend_from_slice(record.topic.as_bytes()),
                    'p' => out.extend_from_slice(record.partition.to_string().as_bytes()),
                    'o' => out.extend_from_slice(record.offset.to_string().as_bytes()),
                    'k' => out.extend(bytes_or_empty(&record.key)),
                    's' => out.extend(bytes_or_empty(&record.value)),
                    'T' => out.extend_from_slice(record.timestamp.to_string().as_bytes()),
                    'K' => out.extend_from_slice(length(&record.key).to_string().as_bytes()),
                    'S' => out.extend_from_slice(length(&record.value).to_string().as_bytes()),
                    'h' => {
                        for (i, header) in record.headers.iter().enumerate() {
                            if i > 0 {
                                out.push(b',');
                            }
                            out.extend_from_slice(&header.key);
                            out.push(b'=');
                            out.extend(header.value.as_deref().unwrap_or_default());
                        }
                    }
                    '%' => out.push(b'%'),
                    other => {
                        out.push(b'%');
                        out.extend_from_slice(other.to_string().as_bytes());
                    }
                }
            }
            ('\\', Some(escape @ ('n' | 't' | '\\'))) => {
                chars.next();
                out.push(match escape {
                    'n' => b'\n',
                    't' => b'\t',
                    _ => b'\\',
                });
            }
            _ => {
                let mut buffer = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
}

fn settings(args: &ConsumeArgs, start: Start) -> anyhow::Result<BTreeMap<String, String>> {
    let mut settings = BTreeMap::new();
    settings.insert("bootstrap.servers".to_string(), args.bootstrap.join(","));
    settings.insert("client.id".to_string(), "sluice-consume".to_string());
    if let Some(group) = &args.group {
        settings.insert("group.id".to_string(), group.clone());
        let reset = match start {
            Start::Beginning => "earliest",
            Start::End => "latest",
            _ => bail!("with -g, -o takes beginning or end (the group's commits come first)"),
        };
        settings.insert("auto.offset.reset".to_string(), reset.to_string());
    }
    for setting in &args.settings {
        match setting.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                settings.insert(key.to_string(), value.to_string());
            }
            _ => bail!("-X expects key=value, got '{setting}'"),
        }
    }
    Ok(settings)
}

/// The topic's partitions (or `-p`), positioned at `start`, for a group-less read.
async fn assign(consumer: &mut Consumer, args: &ConsumeArgs, start: Start) -> anyhow::Result<()> {
    let admin = Admin::connect(ClientConfig::new(args.bootstrap.iter().cloned())).await?;
    let described = admin
        .describe_topics(std::slice::from_ref(&args.topic))
        .await?
        .remove(&args.topic)
        .context("no answer for the topic")?
        .map_err(|e| anyhow::anyhow!("topic '{}': {e}", args.topic))?;
    let partitions: Vec<TopicPartition> = described
        .partitions
        .iter()
        .map(|p| TopicPartition::new(args.topic.clone(), p.partition))
        .filter(|tp| args.partition.is_none_or(|only| only == tp.partition))
        .collect();
    if partitions.is_empty() {
        bail!(
            "topic '{}' has no partition {:?}",
            args.topic,
            args.partition
        );
    }
    consumer.assign(partitions.clone())?;
    match start {
        Start::Beginning => consumer.seek_to_beginning(&partitions)?,
        Start::End => consumer.seek_to_end(&partitions)?,
        Start::Offset(offset) => {
            for partition in &partitions {
                consumer.seek(partition, offset)?;
            }
        }
        Start::Timestamp(ms) => {
            let specs = partitions
                .iter()
                .map(|p| (p.clone(), OffsetSpec::Timestamp(ms)))
                .collect();
            for (partition, found) in admin.list_offsets(&specs).await? {
                let found = found.map_err(|e| anyhow::anyhow!("{partition}: {e}"))?;
                if found.offset >= 0 {
                    consumer.seek(&partition, found.offset)?;
                } else {
                    consumer.seek_to_end(std::slice::from_ref(&partition))?;
                }
            }
        }
    }
    Ok(())
}

/// Whether every assigned partition has been read to the end it reported.
fn at_end(consumer: &Consumer) -> bool {
    let metrics = consumer.metrics();
    !consumer.assignment().is_empty()
        && consumer.assignment().iter().all(|partition| {
            metrics
                .get(partition)
                .is_some_and(|m| m.lag_records == Some(0))
        })
}

pub fn run(args: ConsumeArgs) -> anyhow::Result<()> {
    let start = parse_start(&args.offset)?;
    let config =
        ConsumerConfig::from_map(&settings(&args, start)?).context("invalid consumer settings")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let mut consumer = Consumer::new(config)
            .await
            .with_context(|| format!("cannot reach the cluster at {}", args.bootstrap.join(",")))?;
        if args.group.is_some() {
            consumer.subscribe([args.topic.clone()], None)?;
        } else {
            assign(&mut consumer, &args, start).await?;
        }
        let stdout = std::io::stdout();
        let mut printed = 0u64;
        let mut buffer = Vec::new();
        let outcome: anyhow::Result<()> = loop {
            if args.count.is_some_and(|count| printed >= count) {
                break Ok(());
            }
            let records = tokio::select! {
                polled = consumer.poll(Duration::from_millis(200)) => polled,
                _ = tokio::signal::ctrl_c() => break Ok(()),
            };
            let records = match records {
                Ok(records) => records,
                Err(error) => break Err(error.into()),
            };
            buffer.clear();
            for record in &records {
                if args.count.is_some_and(|count| printed >= count) {
                    break;
                }
                format_record(&args.format, record, &mut buffer);
                printed += 1;
            }
            let mut out = stdout.lock();
            if let Err(error) = out.write_all(&buffer).and_then(|()| out.flush()) {
                // A closed pipe (`| head`) ends the read quietly.
                if error.kind() == std::io::ErrorKind::BrokenPipe {
                    break Ok(());
                }
                break Err(error.into());
            }
            if args.exit_at_end && records.is_empty() && at_end(&consumer) {
                break Ok(());
            }
        };
        // Leaves the group and commits what was printed (auto-commit).
        let closed = consumer.close().await;
        outcome?;
        closed.context("closing the consumer")?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use sluice_protocol::{Header, TimestampType};

    #[test]
    fn formats_like_kcat() {
        let record = ConsumerRecord {
            topic: "t".into(),
            partition: 2,
            offset: 41,
            timestamp: 1_700_000_000_000,
            timestamp_type: TimestampType::CreateTime,
            key: Some(Bytes::from_static(b"k")),
            value: None,
            headers: vec![
                Header {
                    key: Bytes::from_static(b"a"),
                    value: Some(Bytes::from_static(b"1")),
                },
                Header {
                    key: Bytes::from_static(b"b"),
                    value: None,
                },
            ],
            leader_epoch: None,
        };
        let mut out = Vec::new();
        format_record(
            "%t/%p@%o %k=%s (%K,%S) [%h] %T 100%% %x\\t|\\n",
            &record,
            &mut out,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "t/2@41 k= (1,-1) [a=1,b=] 1700000000000 100% %x\t|\n"
        );
    }

    #[test]
    fn start_offsets_parse() {
        assert_eq!(parse_start("beginning").unwrap(), Start::Beginning);
        assert_eq!(parse_start("end").unwrap(), Start::End);
        assert_eq!(parse_start("42").unwrap(), Start::Offset(42));
        assert_eq!(
            parse_start("@1700000000000").unwrap(),
            Start::Timestamp(1_700_000_000_000)
        );
        assert!(parse_start("-3").is_err());
        assert!(parse_start("@soon").is_err());
    }
}
