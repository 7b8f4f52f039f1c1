//! The native producer as the compat suite (`compat/client/run.sh`) and the client bench
//! (`bench/client`) drive it: one mode per run, Kafka's producer settings as `-X key=value`.
//!
//! ```text
//! client_compat produce BOOTSTRAP TOPIC RECORDS_FILE [-X key=value ...]
//!     Sends every record of RECORDS_FILE (one a line, tab-separated: key, value, headers,
//!     timestamp; key and value in hex or `-` for null; headers `name_hex:value_hex`
//!     (value `-`: null) joined with `,`, or empty; timestamp in ms or `-` for now) in
//!     order, then prints `INDEX<TAB>PARTITION<TAB>OFFSET` per record (file order) and exits
//!     0 once every record was acknowledged (1 after printing each failure).
//! client_compat stream BOOTSTRAP TOPIC COUNT RATE [-X key=value ...]
//!     Sends COUNT records (key `k-(i % 97)`, value `i`) at about RATE records/s, printing
//!     `sent I` every 250 records and `acked N` as acknowledgements arrive (so a driver can
//!     kill the broker mid-stream), then `delivered N failed M` (and each failure) at the
//!     end; exit 0 only if every record was acknowledged.
//! client_compat txn BOOTSTRAP TOPIC TRANSACTIONAL_ID COUNT [-X key=value ...]
//!     init_transactions, then three transactions of COUNT records each: `commit-1-I`
//!     (committed), `abort-I` (flushed so it reaches the log, then aborted), `commit-2-I`
//!     (committed); keys `k-I`. Prints each step (`committed 1`, `aborted`, ...).
//! client_compat burst BOOTSTRAP TOPIC COUNT VALUE_BYTES [-X key=value ...]
//!     Sends COUNT records without key (the sticky partitioner spreads them), value `I`
//!     (10 digits) padded with `.` to VALUE_BYTES bytes, as fast as `send` takes them,
//!     then prints `INDEX<TAB>PARTITION<TAB>OFFSET` per acknowledged record (send order),
//!     `failure I: ERROR` per failed one and `delivered N failed M`; exit 0 only if every
//!     record was acknowledged.
//! client_compat perf BOOTSTRAP TOPIC RECORDS VALUE_BYTES [-X key=value ...]
//!     Sends RECORDS records of VALUE_BYTES bytes (no key) as fast as `send` takes them,
//!     flushes, and prints one line `RESULT {json}`: records, bytes, seconds, records/s,
//!     MB/s (10^6 bytes of values per second), failures, and the process's peak RSS
//!     (VmHWM) in KiB.
//! client_compat consume-perf BOOTSTRAP TOPIC PARTITIONS RECORDS [-X key=value ...]
//!     Assigns partitions 0..PARTITIONS of TOPIC (no group: `assign`, no commits),
//!     seeks them to the beginning and polls until RECORDS records arrived; the clock runs
//!     from the assign to the last record (so it holds the first poll's metadata,
//!     ListOffsets and first Fetch round trips; the time to the first record is
//!     `startup_s`).
//!     Prints one line `RESULT {json}`: records, value bytes, seconds, records/s, MB/s
//!     (10^6 bytes of values per second) and peak RSS (VmHWM) in KiB; exit 1 if more
//!     records arrived than asked or none for 30 s.
//! ```

use std::collections::VecDeque;
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use sluice_client::TopicPartition;
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{DeliveryFuture, Producer, ProducerConfig, ProducerRecord};

fn usage() -> ! {
    eprintln!(
        "usage: client_compat produce BOOTSTRAP TOPIC RECORDS_FILE [-X k=v ...]\n       \
         client_compat stream BOOTSTRAP TOPIC COUNT RATE [-X k=v ...]\n       \
         client_compat txn BOOTSTRAP TOPIC TRANSACTIONAL_ID COUNT [-X k=v ...]\n       \
         client_compat burst BOOTSTRAP TOPIC COUNT VALUE_BYTES [-X k=v ...]\n       \
         client_compat perf BOOTSTRAP TOPIC RECORDS VALUE_BYTES [-X k=v ...]\n       \
         client_compat consume-perf BOOTSTRAP TOPIC PARTITIONS RECORDS [-X k=v ...]"
    );
    std::process::exit(2)
}

/// Positional arguments and `-X key=value` settings.
fn parse_args() -> (String, Vec<String>, Vec<(String, String)>) {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| usage());
    let mut positional = Vec::new();
    let mut settings = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "-X" {
            let setting = args.next().unwrap_or_else(|| usage());
            match setting.split_once('=') {
                Some((key, value)) => settings.push((key.to_string(), value.to_string())),
                None => usage(),
            }
        } else {
            positional.push(arg);
        }
    }
    (mode, positional, settings)
}

fn config(
    bootstrap: &str,
    settings: &[(String, String)],
    extra: &[(&str, &str)],
) -> anyhow::Result<ProducerConfig> {
    let mut all: Vec<(String, String)> = vec![("bootstrap.servers".into(), bootstrap.into())];
    all.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    all.extend(settings.iter().cloned());
    Ok(ProducerConfig::from_iter(all)?)
}

fn unhex(text: &str) -> anyhow::Result<Option<Bytes>> {
    if text == "-" {
        return Ok(None);
    }
    if !text.len().is_multiple_of(2) {
        bail!("odd-length hex {text:?}");
    }
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .with_context(|| format!("bad hex {text:?}"))?;
    Ok(Some(Bytes::from(bytes)))
}

fn parse_record(topic: &str, line: &str) -> anyhow::Result<ProducerRecord> {
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() != 4 {
        bail!("expected 4 tab-separated fields, got {}", fields.len());
    }
    let mut record = ProducerRecord::new(topic, Bytes::new());
    record.key = unhex(fields[0])?;
    record.value = unhex(fields[1])?;
    for header in fields[2].split(',').filter(|h| !h.is_empty()) {
        let (name, value) = header
            .split_once(':')
            .with_context(|| format!("bad header {header:?}"))?;
        let name = unhex(name)?.unwrap_or_default();
        record = record.with_header(name, unhex(value)?);
    }
    if fields[3] != "-" {
        record = record.with_timestamp(fields[3].parse().context("bad timestamp")?);
    }
    Ok(record)
}

async fn produce(
    bootstrap: &str,
    topic: &str,
    file: &str,
    settings: &[(String, String)],
) -> anyhow::Result<bool> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
    let records = text
        .lines()
        .enumerate()
        .map(|(n, line)| parse_record(topic, line).with_context(|| format!("{file}:{}", n + 1)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let producer = Producer::connect(config(bootstrap, settings, &[])?).await?;
    let mut deliveries = Vec::with_capacity(records.len());
    for record in records {
        deliveries.push(producer.send(record).await?);
    }
    producer.flush().await?;
    let mut ok = true;
    let mut out = std::io::stdout().lock();
    for (index, delivery) in deliveries.into_iter().enumerate() {
        match delivery.await {
            Ok(metadata) => writeln!(out, "{index}\t{}\t{}", metadata.partition, metadata.offset)?,
            Err(error) => {
                eprintln!("client_compat: record {index}: {error}");
                ok = false;
            }
        }
    }
    producer.close().await?;
    Ok(ok)
}

/// Pops the deliveries at the front that have their answer; counts them.
fn drain(pending: &mut VecDeque<(u64, DeliveryFuture)>, acked: &mut u64, failed: &mut Vec<String>) {
    while let Some((_, front)) = pending.front() {
        match front.try_result() {
            None => break,
            Some(Ok(_)) => *acked += 1,
            Some(Err(error)) => failed.push(format!("record {}: {error}", pending[0].0)),
        }
        pending.pop_front();
    }
}

async fn stream(
    bootstrap: &str,
    topic: &str,
    count: u64,
    rate: u64,
    settings: &[(String, String)],
) -> anyhow::Result<bool> {
    let producer = Producer::connect(config(bootstrap, settings, &[])?).await?;
    let started = Instant::now();
    let mut pending = VecDeque::new();
    let (mut acked, mut failed) = (0u64, Vec::new());
    let mut last_acked_print = 0;
    for i in 0..count {
        let due = started + Duration::from_secs_f64(i as f64 / rate.max(1) as f64);
        let now = Instant::now();
        if due > now {
            tokio::time::sleep(due - now).await;
        }
        let record = ProducerRecord::new(topic, format!("{i}")).with_key(format!("k-{}", i % 97));
        pending.push_back((i, producer.send(record).await?));
        drain(&mut pending, &mut acked, &mut failed);
        if (i + 1) % 250 == 0 {
            println!("sent {}", i + 1);
        }
        if acked / 250 != last_acked_print {
            last_acked_print = acked / 250;
            println!("acked {acked}");
        }
    }
    producer.flush().await?;
    while let Some((i, delivery)) = pending.pop_front() {
        match delivery.await {
            Ok(_) => acked += 1,
            Err(error) => failed.push(format!("record {i}: {error}")),
        }
    }
    producer.close().await?;
    for failure in &failed {
        println!("failure {failure}");
    }
    println!("delivered {acked} failed {}", failed.len());
    Ok(failed.is_empty())
}

async fn txn(
    bootstrap: &str,
    topic: &str,
    transactional_id: &str,
    count: u64,
    settings: &[(String, String)],
) -> anyhow::Result<bool> {
    let producer = Producer::connect(config(
        bootstrap,
        settings,
        &[("transactional.id", transactional_id)],
    )?)
    .await?;
    producer
        .init_transactions()
        .await
        .context("init_transactions")?;
    println!("initialized");
    for (name, commit) in [("commit-1", true), ("abort", false), ("commit-2", true)] {
        producer.begin_transaction()?;
        let mut deliveries = Vec::new();
        for i in 0..count {
            let record =
                ProducerRecord::new(topic, format!("{name}-{i}")).with_key(format!("k-{i}"));
            deliveries.push(
                producer
                    .send(record)
                    .await
                    .with_context(|| format!("{name}: send"))?,
            );
        }
        if commit {
            producer
                .commit_transaction()
                .await
                .with_context(|| format!("{name}: commit_transaction"))?;
            for delivery in deliveries {
                delivery
                    .await
                    .with_context(|| format!("{name}: delivery"))?;
            }
            println!("committed {name}");
        } else {
            // Let the records reach the log before the abort, so a read_uncommitted
            // reader sees them and a read_committed one must skip them.
            producer.flush().await?;
            let mut written = 0;
            for delivery in deliveries {
                if delivery.await.is_ok() {
                    written += 1;
                }
            }
            producer
                .abort_transaction()
                .await
                .with_context(|| format!("{name}: abort_transaction"))?;
            println!("aborted {name} ({written} records written before the abort)");
        }
    }
    producer.close().await?;
    Ok(true)
}

async fn burst(
    bootstrap: &str,
    topic: &str,
    count: u64,
    value_bytes: usize,
    settings: &[(String, String)],
) -> anyhow::Result<bool> {
    let producer = Producer::connect(config(bootstrap, settings, &[])?).await?;
    let mut deliveries = Vec::with_capacity(count as usize);
    for i in 0..count {
        let mut value = format!("{i:010}").into_bytes();
        value.resize(value_bytes.max(value.len()), b'.');
        deliveries.push(producer.send(ProducerRecord::new(topic, value)).await?);
    }
    producer.flush().await?;
    let (mut acked, mut failed) = (0u64, 0u64);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (i, delivery) in deliveries.into_iter().enumerate() {
        match delivery.await {
            Ok(metadata) => {
                acked += 1;
                writeln!(out, "{i}\t{}\t{}", metadata.partition, metadata.offset)?;
            }
            Err(error) => {
                failed += 1;
                writeln!(out, "failure {i}: {error}")?;
            }
        }
    }
    producer.close().await?;
    writeln!(out, "delivered {acked} failed {failed}")?;
    out.flush()?;
    Ok(failed == 0)
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kib| kib.parse().ok())
}

async fn perf(
    bootstrap: &str,
    topic: &str,
    records: u64,
    value_bytes: usize,
    settings: &[(String, String)],
) -> anyhow::Result<bool> {
    let producer = Producer::connect(config(bootstrap, settings, &[])?).await?;
    // One metadata round trip before the clock starts, as perf tools do.
    producer.partitions_for(topic).await?;
    // Values of printable bytes that vary (so lz4 has something to do, as with
    // kafka-producer-perf-test's random payloads), one buffer shared by every record.
    let pool: Vec<u8> = (0..value_bytes + 4096)
        .map(|i| b'a' + ((i * 7919 + i / 13) % 26) as u8)
        .collect();
    let pool = Bytes::from(pool);
    let mut pending = VecDeque::new();
    let (mut acked, mut failed) = (0u64, Vec::new());
    let started = Instant::now();
    for i in 0..records {
        let offset = (i as usize * 61) % 4096;
        let value = pool.slice(offset..offset + value_bytes);
        pending.push_back((i, producer.send(ProducerRecord::new(topic, value)).await?));
        if pending.len() >= 4096 {
            drain(&mut pending, &mut acked, &mut failed);
        }
    }
    producer.flush().await?;
    while let Some((i, delivery)) = pending.pop_front() {
        match delivery.await {
            Ok(_) => acked += 1,
            Err(error) => failed.push(format!("record {i}: {error}")),
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    producer.close().await?;
    for failure in failed.iter().take(10) {
        eprintln!("client_compat: {failure}");
    }
    let bytes = records * value_bytes as u64;
    println!(
        "RESULT {{\"records\": {records}, \"value_bytes\": {value_bytes}, \"seconds\": {seconds:.3}, \
         \"records_per_s\": {:.0}, \"mb_per_s\": {:.2}, \"acked\": {acked}, \"failed\": {}, \
         \"peak_rss_kib\": {}}}",
        records as f64 / seconds,
        bytes as f64 / seconds / 1e6,
        failed.len(),
        peak_rss_kib().map_or("null".to_string(), |kib| kib.to_string()),
    );
    Ok(failed.is_empty())
}

async fn consume_perf(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    records: u64,
    settings: &[(String, String)],
) -> anyhow::Result<bool> {
    let mut all: Vec<(String, String)> = vec![
        ("bootstrap.servers".into(), bootstrap.into()),
        ("enable.auto.commit".into(), "false".into()),
    ];
    all.extend(settings.iter().cloned());
    let mut consumer = Consumer::new(ConsumerConfig::from_map(all)?).await?;
    let assigned: Vec<TopicPartition> = (0..partitions)
        .map(|p| TopicPartition::new(topic.to_string(), p))
        .collect();
    let begun = Instant::now();
    consumer.assign(assigned.iter().cloned())?;
    consumer.seek_to_beginning(&assigned)?;
    let mut started: Option<Instant> = None;
    let (mut count, mut bytes, mut last_record) = (0u64, 0u64, Instant::now());
    while count < records {
        let batch = consumer.poll(Duration::from_millis(1000)).await?;
        if batch.is_empty() {
            if last_record.elapsed() > Duration::from_secs(30) {
                eprintln!("client_compat: no record for 30 s after {count} of {records}");
                break;
            }
            continue;
        }
        started.get_or_insert_with(Instant::now);
        last_record = Instant::now();
        count += batch.len() as u64;
        bytes += batch
            .iter()
            .map(|r| r.value.as_ref().map_or(0, |v| v.len() as u64))
            .sum::<u64>();
    }
    let ended = Instant::now();
    let started = started.unwrap_or(ended);
    let seconds = (ended - begun).as_secs_f64();
    let startup = (started - begun).as_secs_f64();
    consumer.close().await?;
    println!(
        "RESULT {{\"records\": {count}, \"value_bytes_total\": {bytes}, \"seconds\": {seconds:.3}, \
         \"startup_s\": {startup:.3}, \"records_per_s\": {:.0}, \"mb_per_s\": {:.2}, \
         \"peak_rss_kib\": {}}}",
        count as f64 / seconds,
        bytes as f64 / seconds / 1e6,
        peak_rss_kib().map_or("null".to_string(), |kib| kib.to_string()),
    );
    Ok(count == records)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // RUST_LOG=sluice_client=debug shows the producer's retries on stderr.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let (mode, positional, settings) = parse_args();
    let arg = |i: usize| -> &str {
        positional
            .get(i)
            .map(String::as_str)
            .unwrap_or_else(|| usage())
    };
    let number = |i: usize| -> anyhow::Result<u64> {
        arg(i)
            .parse()
            .with_context(|| format!("not a number: {}", arg(i)))
    };
    let ok = match mode.as_str() {
        "produce" => produce(arg(0), arg(1), arg(2), &settings).await?,
        "stream" => stream(arg(0), arg(1), number(2)?, number(3)?, &settings).await?,
        "txn" => txn(arg(0), arg(1), arg(2), number(3)?, &settings).await?,
        "burst" => burst(arg(0), arg(1), number(2)?, number(3)? as usize, &settings).await?,
        "perf" => perf(arg(0), arg(1), number(2)?, number(3)? as usize, &settings).await?,
        "consume-perf" => {
            consume_perf(arg(0), arg(1), number(2)? as i32, number(3)?, &settings).await?
        }
        _ => usage(),
    };
    std::io::stdout().flush()?;
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
