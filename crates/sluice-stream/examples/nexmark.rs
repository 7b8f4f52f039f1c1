//! The Nexmark benchmark driver behind `bench/nexmark`: runs the queries of
//! `sluice_stream::nexmark::queries` over generated events, from memory or from a Sluice
//! (or Kafka) topic, and prints one line per query.
//!
//! ```text
//! cargo run --release -p sluice-stream --example nexmark -- \
//!     --query q0|q1|q2|q3|q4|q5|q7|q8|q11|q12|all --events N \
//!     [--source memory|kafka] [--checkpoint-interval-ms 10000] [--checkpoint-dir DIR]
//!     [--seed S] [--events-per-second 10000] [--digest]
//!     [--bootstrap HOST:PORT] [--topic NAME] [--partitions 1] [--compression none]
//!     [--broker-pid PID] [--keep-topic]
//! ```
//!
//! `--events-per-second` is the generator's event-time rate (the reference default,
//! 10,000): it sets how many events a 10 s window holds, so the state the windowed queries
//! keep. Flink Nexmark's published runs generate at 10 M events/s, so their windows hold
//! a thousand times more events than the default's.
//!
//! `--source memory` (the default) measures the job's `execute` only. Before each query
//! the events are generated (the reference generator's defaults: 1:3:46 people, auctions
//! and bids at 10,000 events/s of event time) into a `CollectionSource`, so generation is
//! not in the figure (its time is printed as `generate_seconds`: Flink Nexmark's figures
//! include its in-job generator source), but the source's clone of each event as it emits
//! it is (`CollectionSource` replays a script and keeps it for restarts). Watermarks are
//! Flink's `forMonotonousTimestamps`, emitted every 200 ms; every query's output goes to
//! a sink that only counts rows. The executor is single-threaded, so events per
//! CPU-second of the process is the per-core figure; wall-clock events/s is printed
//! beside it because the machine may be shared.
//!
//! `--source kafka` (needs `--bootstrap`) runs each query in two phases:
//! 1. not timed: the same events (same seed and settings) are generated and produced, as
//!    their JSON form (`Event::to_json`, the `datagen` row of `nexmark::model`), into a
//!    fresh topic created with `Admin`: `--partitions` partitions (default 1, so the job
//!    reads them in the generator's order, as the memory source does), `retention.ms=-1`
//!    (the events' timestamps are from 2015: the broker's 7-day retention would delete
//!    whole segments of a large run). The native producer: idempotent, `acks=all`,
//!    `linger.ms=5`, `batch.size` 16384 (Kafka's default), `--compression` (default
//!    `none`), no key, the record's timestamp the event's `dateTime`; every delivery is
//!    awaited before phase 2. Printed as `generate_seconds` (the generator alone) and
//!    `produce_seconds` (encoding, sending, waiting for the acknowledgements). The topic is
//!    `--topic` (`NAME-<query>` when several queries run), by default
//!    `nexmark-<query>-<unix ms>`; it must not exist, and it is deleted after the run
//!    unless `--keep-topic`;
//! 2. timed, the figure: the same job with the generator replaced by a
//!    `kafka::KafkaSource` over that topic (`read_committed`, from the earliest offsets,
//!    `with_bounded(StoppingOffsets::Latest)`: it stops at the offsets that were the end
//!    when it started and then emits the final watermark, as the memory source does at
//!    its end, so every event-time window fires), values parsed with
//!    `serde_json::from_slice::<Event>`, the same watermark strategy, checkpoints and sink.
//!    The consumer's settings are the source's defaults. The CPU time is the whole driver
//!    process's over `execute`: the job's thread (the executor, the JSON parsing, and the
//!    consumer's poll, which the source runs there with `block_on`: fetching, decoding,
//!    decompressing) and the worker of the source's one-worker tokio runtime (its spawned
//!    tasks, the IO driver), so events per CPU-second is still the per-core figure, but
//!    of more than one thread; `job_thread_cpu_seconds` is the job's thread's part. The broker's CPU is not in it: with `--broker-pid` the
//!    broker process's CPU seconds over the same interval are printed as
//!    `broker_cpu_seconds`. The records read must number the events produced (else the run
//!    fails).
//!
//! `--digest` adds an order-independent hash of the output rows, `output_digest` (the
//! wrapping sum of a SipHash of each row's `Debug` form, with fixed keys), so that runs
//! over the same events (memory and kafka, say) can be compared row for row rather than
//! by count. Formatting every row costs CPU inside the timed part: check with it, measure
//! without it. q12 windows by processing time: its rows (and their number) depend on
//! how fast the job runs and on when it started, so they differ between sources, and
//! between runs of one source. With `--partitions` above 1 the source interleaves the
//! partitions, so a bid can arrive before its auction, which q4 drops
//! (`queries::winning_bids`): q4's rows differ then; the other event-time queries' do not.
//!
//! Checkpoints go to `DIR/<query>` (emptied first, so a run never restores an earlier
//! one), the newest one kept. Their duration is read back from the directory: from the
//! trigger time recorded in the checkpoint to the modification time of its `_metadata`
//! (written and renamed last), so it covers the snapshot, its JSON encoding and the
//! fsyncs, to within a few milliseconds (mtimes come from the kernel's coarse clock). The
//! executor is synchronous: processing stops for that long.
//!
//! Output, one line per query, whitespace-separated `key=value` fields:
//! `query= source= events= generate_seconds= produce_seconds= seconds= events_per_second=
//! cpu_seconds= job_thread_cpu_seconds= events_per_cpu_second= broker_cpu_seconds=
//! output_rows= output_digest=
//! checkpoints= last_checkpoint_id= last_checkpoint_ms= last_checkpoint_bytes= topic=`
//! (`-` where there is no value: the memory source's `produce_seconds`,
//! `broker_cpu_seconds` and `topic`, no `--digest`, no checkpoint completed, no `/proc`).

use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt::Debug;
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, NewTopic};
use sluice_stream::kafka::{KafkaSource, StoppingOffsets};
use sluice_stream::nexmark::queries;
use sluice_stream::nexmark::{Event, Generator, GeneratorConfig};
use sluice_stream::{
    CollectionSource, DataStream, DirectoryCheckpointStorage, Sink, StreamError,
    StreamExecutionEnvironment, WatermarkStrategy,
};

const QUERIES: [&str; 10] = ["q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q11", "q12"];
/// Bounds the in-memory stream: at a few hundred bytes per event, 50 M events is ~15 GB.
const EVENTS_MAX: u64 = 50_000_000;
/// Phase 1 generates this many events, then produces them (so the two are timed apart).
const PRODUCE_CHUNK_EVENTS: usize = 10_000;
/// Deliveries not yet awaited in phase 1 (each is a few dozen bytes).
const PRODUCE_PENDING_MAX: usize = 200_000;

/// The newest completed checkpoint of a run, as read back from its directory.
struct CompletedCheckpointSummary {
    checkpoint_id: u64,
    /// From the trigger to the `_metadata` rename.
    duration_ms: i64,
    /// `state.json` plus `_metadata`.
    size_bytes: u64,
}

/// Counts rows and, with `--digest`, adds each row's hash to `digest`; keeps none.
struct CountingSink {
    rows: Rc<Cell<u64>>,
    digest: Option<Rc<Cell<u64>>>,
}

/// Feeds `Debug` output to a hasher without building the string.
struct HashWriter<'a>(&'a mut DefaultHasher);

impl std::fmt::Write for HashWriter<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0.write(text.as_bytes());
        Ok(())
    }
}

impl<T: Debug + 'static> Sink<T> for CountingSink {
    fn write(&mut self, value: T, _timestamp: Option<i64>) -> Result<(), StreamError> {
        self.rows.set(self.rows.get() + 1);
        if let Some(digest) = &self.digest {
            // `DefaultHasher::new` has fixed keys: the same row hashes alike in every run.
            let mut hasher = DefaultHasher::new();
            std::fmt::Write::write_fmt(&mut HashWriter(&mut hasher), format_args!("{value:?}"))
                .map_err(|error| StreamError::Function(error.to_string()))?;
            digest.set(digest.get().wrapping_add(hasher.finish()));
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SourceKind {
    Memory,
    Kafka,
}

impl SourceKind {
    fn name(self) -> &'static str {
        match self {
            SourceKind::Memory => "memory",
            SourceKind::Kafka => "kafka",
        }
    }
}

struct Options {
    queries: Vec<String>,
    events: u64,
    seed: u64,
    events_per_second: u64,
    checkpoint_interval_ms: u64,
    checkpoint_dir: PathBuf,
    source: SourceKind,
    digest: bool,
    bootstrap: Option<String>,
    topic: Option<String>,
    partitions: i32,
    compression: String,
    broker_pid: Option<u32>,
    keep_topic: bool,
}

fn usage() -> String {
    "usage: nexmark --query q0|q1|q2|q3|q4|q5|q7|q8|q11|q12|all --events N \
     [--source memory|kafka] [--checkpoint-interval-ms MS] [--checkpoint-dir DIR] [--seed S] \
     [--events-per-second R] [--digest] [--bootstrap HOST:PORT] [--topic NAME] \
     [--partitions N] [--compression none|gzip|snappy|lz4|zstd] [--broker-pid PID] [--keep-topic]"
        .to_string()
}

fn parse_options() -> Result<Options, String> {
    let mut query = None;
    let mut events = 1_000_000_u64;
    let mut seed = 0_u64;
    let mut events_per_second = GeneratorConfig::default().events_per_second;
    let mut checkpoint_interval_ms = 10_000_u64;
    let mut checkpoint_dir = std::env::temp_dir().join("sluice-nexmark-checkpoints");
    let mut source = SourceKind::Memory;
    let mut digest = false;
    let mut bootstrap = None;
    let mut topic = None;
    let mut partitions = 1_u64;
    let mut compression = "none".to_string();
    let mut broker_pid = None;
    let mut keep_topic = false;
    let mut arguments = std::env::args().skip(1);
    while let Some(flag) = arguments.next() {
        let mut value = || {
            arguments
                .next()
                .ok_or_else(|| format!("{flag} needs a value\n{}", usage()))
        };
        let number = |text: String| {
            text.replace('_', "")
                .parse::<u64>()
                .map_err(|error| format!("{flag} {text}: {error}"))
        };
        match flag.as_str() {
            "--query" => query = Some(value()?),
            "--events" => events = number(value()?)?,
            "--seed" => seed = number(value()?)?,
            "--events-per-second" => events_per_second = number(value()?)?,
            "--checkpoint-interval-ms" => checkpoint_interval_ms = number(value()?)?,
            "--checkpoint-dir" => checkpoint_dir = PathBuf::from(value()?),
            "--source" => {
                source = match value()?.as_str() {
                    "memory" => SourceKind::Memory,
                    "kafka" => SourceKind::Kafka,
                    other => return Err(format!("unknown source {other}\n{}", usage())),
                }
            }
            "--digest" => digest = true,
            "--bootstrap" => bootstrap = Some(value()?),
            "--topic" => topic = Some(value()?),
            "--partitions" => partitions = number(value()?)?,
            "--compression" => compression = value()?,
            "--broker-pid" => {
                let pid = number(value()?)?;
                broker_pid =
                    Some(u32::try_from(pid).map_err(|_| format!("--broker-pid {pid}: too large"))?);
            }
            "--keep-topic" => keep_topic = true,
            "--help" | "-h" => return Err(usage()),
            other => return Err(format!("unknown argument {other}\n{}", usage())),
        }
    }
    let query = query.ok_or_else(usage)?;
    let queries = if query == "all" {
        QUERIES.iter().map(|name| name.to_string()).collect()
    } else if QUERIES.contains(&query.as_str()) {
        vec![query]
    } else {
        return Err(format!("unknown query {query}\n{}", usage()));
    };
    if events == 0 || events > EVENTS_MAX {
        return Err(format!("--events must be in 1..={EVENTS_MAX}"));
    }
    if checkpoint_interval_ms == 0 {
        return Err("--checkpoint-interval-ms must be positive".to_string());
    }
    let partitions = i32::try_from(partitions)
        .ok()
        .filter(|partitions| *partitions > 0)
        .ok_or_else(|| format!("--partitions must be in 1..={}", i32::MAX))?;
    if source == SourceKind::Kafka && bootstrap.is_none() {
        return Err(format!("--source kafka needs --bootstrap\n{}", usage()));
    }
    Ok(Options {
        queries,
        events,
        seed,
        events_per_second,
        checkpoint_interval_ms,
        checkpoint_dir,
        source,
        digest,
        bootstrap,
        topic,
        partitions,
        compression,
        broker_pid,
        keep_topic,
    })
}

/// Adds `query` over `events` to the job, its output into a counting sink.
fn add_query(
    query: &str,
    events: &DataStream<Event>,
    rows: &Rc<Cell<u64>>,
    digest: &Option<Rc<Cell<u64>>>,
) {
    let sink = || CountingSink {
        rows: rows.clone(),
        digest: digest.clone(),
    };
    match query {
        "q0" => queries::q0(events).sink_to(sink()),
        "q1" => queries::q1(events).sink_to(sink()),
        "q2" => queries::q2(events).sink_to(sink()),
        "q3" => queries::q3(events).sink_to(sink()),
        "q4" => queries::q4(events).sink_to(sink()),
        "q5" => queries::q5(events).sink_to(sink()),
        "q7" => queries::q7(events).sink_to(sink()),
        "q8" => queries::q8(events).sink_to(sink()),
        "q11" => queries::q11(events).sink_to(sink()),
        "q12" => queries::q12(events).sink_to(sink()),
        other => unreachable!("parse_options accepts only known queries, got {other}"),
    }
}

/// User plus system CPU time of process `pid` (`self` for this one), all its threads,
/// from `/proc/<pid>/stat` (Linux); `None` elsewhere or when it has gone.
fn process_cpu_seconds(pid: &str) -> Option<f64> {
    stat_cpu_seconds(&format!("/proc/{pid}/stat"))
}

/// User plus system CPU time of the calling thread (`/proc/thread-self/stat`).
fn thread_cpu_seconds() -> Option<f64> {
    stat_cpu_seconds("/proc/thread-self/stat")
}

fn stat_cpu_seconds(path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name may hold spaces; the fields after its closing parenthesis do not.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let user_ticks: u64 = fields.get(11)?.parse().ok()?;
    let system_ticks: u64 = fields.get(12)?.parse().ok()?;
    // Linux reports in USER_HZ, 100 on every mainstream architecture.
    Some((user_ticks + system_ticks) as f64 / 100.0)
}

/// A runtime for the producer and admin calls of phase 1; dropped before phase 2, whose
/// source runs its own (a job must not run on a runtime's thread).
fn client_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("nexmark-producer")
        .enable_all()
        .build()
        .map_err(|error| format!("starting the producer's runtime: {error}"))
}

/// What phase 1 of a kafka run did.
struct Produced {
    events: u64,
    generate_seconds: f64,
    produce_seconds: f64,
}

/// Phase 1: creates `topic` and produces the generator's events into it, every delivery
/// awaited.
fn produce_events(
    generator: &Generator,
    topic: &str,
    options: &Options,
) -> Result<Produced, String> {
    let bootstrap = options.bootstrap.clone().expect("checked by parse_options");
    let runtime = client_runtime()?;
    runtime.block_on(async {
        let admin = Admin::connect(ClientConfig::new([bootstrap.clone()]))
            .await
            .map_err(|error| format!("connecting to {bootstrap}: {error}"))?;
        let new_topic = NewTopic {
            name: topic.to_string(),
            num_partitions: Some(options.partitions),
            replication_factor: None,
            configs: vec![("retention.ms".to_string(), "-1".to_string())],
        };
        let created = admin
            .create_topics(&[new_topic], false)
            .await
            .map_err(|error| format!("creating topic {topic}: {error}"))?;
        match created.get(topic) {
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(format!("creating topic {topic}: {error}")),
            None => return Err(format!("creating topic {topic}: no answer for it")),
        }
        let config = ProducerConfig::from_iter([
            ("bootstrap.servers", bootstrap.as_str()),
            ("enable.idempotence", "true"),
            ("acks", "all"),
            ("linger.ms", "5"),
            ("compression.type", options.compression.as_str()),
        ])
        .map_err(|error| format!("producer configuration: {error}"))?;
        let producer = Producer::connect(config)
            .await
            .map_err(|error| format!("connecting the producer: {error}"))?;
        let started = Instant::now();
        let mut generating = Duration::ZERO;
        let mut events = generator.clone();
        let mut chunk: Vec<Event> = Vec::with_capacity(PRODUCE_CHUNK_EVENTS);
        let mut pending = VecDeque::new();
        let mut count = 0_u64;
        loop {
            let generated = Instant::now();
            chunk.extend(events.by_ref().take(PRODUCE_CHUNK_EVENTS));
            generating += generated.elapsed();
            if chunk.is_empty() {
                break;
            }
            for event in chunk.drain(..) {
                let record = ProducerRecord::new(topic, event.to_json())
                    .with_timestamp(event.timestamp_ms());
                let delivery = producer
                    .send(record)
                    .await
                    .map_err(|error| format!("producing to {topic}: {error}"))?;
                pending.push_back(delivery);
                count += 1;
            }
            while pending.len() > PRODUCE_PENDING_MAX {
                let delivery = pending.pop_front().expect("longer than the bound");
                delivery
                    .await
                    .map_err(|error| format!("producing to {topic}: {error}"))?;
            }
        }
        for delivery in pending {
            delivery
                .await
                .map_err(|error| format!("producing to {topic}: {error}"))?;
        }
        producer
            .close()
            .await
            .map_err(|error| format!("closing the producer: {error}"))?;
        let produce_seconds = (started.elapsed() - generating).as_secs_f64();
        Ok(Produced {
            events: count,
            generate_seconds: generating.as_secs_f64(),
            produce_seconds,
        })
    })
}

fn delete_topic(topic: &str, options: &Options) -> Result<(), String> {
    let bootstrap = options.bootstrap.clone().expect("checked by parse_options");
    client_runtime()?.block_on(async {
        let admin = Admin::connect(ClientConfig::new([bootstrap.clone()]))
            .await
            .map_err(|error| format!("connecting to {bootstrap}: {error}"))?;
        let deleted = admin
            .delete_topics(&[topic.to_string()])
            .await
            .map_err(|error| error.to_string())?;
        match deleted.get(topic) {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => Err(error.to_string()),
            None => Err("no answer for it".to_string()),
        }
    })
}

/// Duration and size of the newest completed checkpoint under `root`, if any.
fn last_checkpoint(root: &Path) -> Result<Option<CompletedCheckpointSummary>, String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Ok(None);
    };
    let mut newest: Option<(u64, PathBuf)> = None;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|name| name.strip_prefix("chk-"))
            .and_then(|id| id.parse::<u64>().ok())
        else {
            continue;
        };
        if entry.path().join("_metadata").is_file()
            && newest.as_ref().is_none_or(|(newest_id, _)| id > *newest_id)
        {
            newest = Some((id, entry.path()));
        }
    }
    let Some((checkpoint_id, directory)) = newest else {
        return Ok(None);
    };
    let mut size_bytes = 0;
    for entry in std::fs::read_dir(&directory).map_err(|error| error.to_string())? {
        let entry = entry.map_err(|error| error.to_string())?;
        size_bytes += entry.metadata().map_err(|error| error.to_string())?.len();
    }
    let state = std::fs::read(directory.join("state.json")).map_err(|error| error.to_string())?;
    let trigger: TriggerTime = serde_json::from_slice(&state).map_err(|error| error.to_string())?;
    let completed_ms = std::fs::metadata(directory.join("_metadata"))
        .and_then(|metadata| metadata.modified())
        .map_err(|error| error.to_string())?
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|error| error.to_string())?
        .as_millis();
    // A file's mtime comes from the kernel's coarse clock (a few ms behind the system
    // clock the trigger time was read from): short checkpoints can come out negative.
    let duration_ms =
        (i64::try_from(completed_ms).unwrap_or(i64::MAX) - trigger.timestamp_ms).max(0);
    Ok(Some(CompletedCheckpointSummary {
        checkpoint_id,
        duration_ms,
        size_bytes,
    }))
}

/// The one field of a checkpoint's `state.json` the driver needs.
#[derive(serde::Deserialize)]
struct TriggerTime {
    timestamp_ms: i64,
}

struct QueryRun {
    seconds: f64,
    cpu_seconds: Option<f64>,
    /// The part of `cpu_seconds` spent on the job's thread (the executor: the rest is the
    /// kafka source's consumer thread, or nothing for the memory source).
    job_thread_cpu_seconds: Option<f64>,
    broker_cpu_seconds: Option<f64>,
    output_rows: u64,
    output_digest: Option<u64>,
    checkpoints: u64,
    last_checkpoint: Option<CompletedCheckpointSummary>,
}

/// Where a query's events come from.
enum QueryInput {
    /// The generated events, in a `CollectionSource`.
    Memory(Vec<Event>),
    /// A topic holding `events` events (phase 2 of a kafka run).
    Kafka { topic: String, events: u64 },
}

fn run_query(query: &str, input: QueryInput, options: &Options) -> Result<QueryRun, String> {
    let checkpoint_root = options.checkpoint_dir.join(query);
    if checkpoint_root.exists() {
        std::fs::remove_dir_all(&checkpoint_root).map_err(|error| {
            format!(
                "emptying the checkpoint directory {}: {error}",
                checkpoint_root.display()
            )
        })?;
    }
    let storage =
        DirectoryCheckpointStorage::new(&checkpoint_root, 1).map_err(|error| error.to_string())?;
    let mut env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(Duration::from_millis(options.checkpoint_interval_ms))
        .set_checkpoint_storage(storage);
    let strategy = || {
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|event: &Event, _| event.timestamp_ms())
    };
    // Records the kafka source parsed, to check against the events produced.
    let records_read = Rc::new(Cell::new(0_u64));
    let (source, expected_records) = match input {
        QueryInput::Memory(events) => (
            env.from_source(
                CollectionSource::of(events),
                strategy(),
                "nexmark-generator",
            ),
            None,
        ),
        QueryInput::Kafka { topic, events } => {
            let bootstrap = options.bootstrap.clone().expect("checked by parse_options");
            let read = records_read.clone();
            let source = KafkaSource::new(bootstrap, [topic], move |bytes: &[u8]| {
                read.set(read.get() + 1);
                serde_json::from_slice::<Event>(bytes).map_err(|error| error.to_string())
            })
            .with_bounded(StoppingOffsets::Latest);
            (
                env.from_kafka_source(source, strategy(), "Nexmark Kafka Source"),
                Some(events),
            )
        }
    };
    let rows = Rc::new(Cell::new(0));
    let digest = options.digest.then(|| Rc::new(Cell::new(0_u64)));
    add_query(query, &source, &rows, &digest);
    let broker_pid = options.broker_pid.map(|pid| pid.to_string());
    let broker_cpu = || broker_pid.as_deref().and_then(process_cpu_seconds);
    let broker_before = broker_cpu();
    let cpu_before = process_cpu_seconds("self");
    let thread_before = thread_cpu_seconds();
    let started = Instant::now();
    let result = env
        .execute(&format!("nexmark-{query}"))
        .map_err(|error| format!("{query}: {error}"))?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = cpu_before
        .zip(process_cpu_seconds("self"))
        .map(|(before, after)| after - before);
    let job_thread_cpu_seconds = thread_before
        .zip(thread_cpu_seconds())
        .map(|(before, after)| after - before);
    let broker_cpu_seconds = broker_before
        .zip(broker_cpu())
        .map(|(before, after)| after - before);
    if let Some(expected) = expected_records
        && records_read.get() != expected
    {
        return Err(format!(
            "{query}: the kafka source read {} records, {expected} were produced",
            records_read.get()
        ));
    }
    Ok(QueryRun {
        seconds,
        cpu_seconds,
        job_thread_cpu_seconds,
        broker_cpu_seconds,
        output_rows: rows.get(),
        output_digest: digest.map(|digest| digest.get()),
        checkpoints: result.num_completed_checkpoints,
        last_checkpoint: last_checkpoint(&checkpoint_root)?,
    })
}

/// The topic of `query`'s kafka run.
fn topic_name(query: &str, options: &Options) -> String {
    match &options.topic {
        Some(name) if options.queries.len() == 1 => name.clone(),
        Some(name) => format!("{name}-{query}"),
        None => {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_millis());
            format!("nexmark-{query}-{now_ms}")
        }
    }
}

/// One query over `options.source`: generation (and production), then the timed run.
fn run(query: &str, generator: &Generator, options: &Options) -> Result<(), String> {
    let optional = |value: Option<String>| value.unwrap_or_else(|| "-".to_string());
    let (events_count, generate_seconds, produce_seconds, topic, run) = match options.source {
        SourceKind::Memory => {
            // Generated again for each query rather than cloned: one copy in memory at a
            // time (~450 bytes per event with the source's buffer; 5 M events is ~2.3 GB).
            let generating = Instant::now();
            let events: Vec<Event> = generator.clone().collect();
            let generate_seconds = generating.elapsed().as_secs_f64();
            eprintln!(
                "{query}: generated {} events in {generate_seconds:.2} s",
                events.len()
            );
            let events_count = events.len() as u64;
            let run = run_query(query, QueryInput::Memory(events), options)?;
            (events_count, generate_seconds, None, None, run)
        }
        SourceKind::Kafka => {
            let topic = topic_name(query, options);
            let produced = produce_events(generator, &topic, options)?;
            eprintln!(
                "{query}: generated {} events in {:.2} s, produced them to {topic} in {:.2} s",
                produced.events, produced.generate_seconds, produced.produce_seconds
            );
            let input = QueryInput::Kafka {
                topic: topic.clone(),
                events: produced.events,
            };
            let run = run_query(query, input, options);
            if !options.keep_topic
                && let Err(error) = delete_topic(&topic, options)
            {
                eprintln!("{query}: deleting topic {topic}: {error}");
            }
            (
                produced.events,
                produced.generate_seconds,
                Some(format!("{:.3}", produced.produce_seconds)),
                Some(topic),
                run?,
            )
        }
    };
    let events_count = events_count as f64;
    let per_cpu_second = run
        .cpu_seconds
        .filter(|seconds| *seconds > 0.0)
        .map(|seconds| format!("{:.0}", events_count / seconds));
    let (checkpoint_id, checkpoint_ms, checkpoint_bytes) = match &run.last_checkpoint {
        Some(summary) => (
            Some(summary.checkpoint_id.to_string()),
            Some(summary.duration_ms.to_string()),
            Some(summary.size_bytes.to_string()),
        ),
        None => (None, None, None),
    };
    println!(
        "query={query} source={} events={} generate_seconds={generate_seconds:.3} \
         produce_seconds={} seconds={:.3} events_per_second={:.0} cpu_seconds={} \
         job_thread_cpu_seconds={} events_per_cpu_second={} broker_cpu_seconds={} output_rows={} output_digest={} \
         checkpoints={} last_checkpoint_id={} last_checkpoint_ms={} \
         last_checkpoint_bytes={} topic={}",
        options.source.name(),
        events_count,
        optional(produce_seconds),
        run.seconds,
        events_count / run.seconds,
        optional(run.cpu_seconds.map(|seconds| format!("{seconds:.2}"))),
        optional(
            run.job_thread_cpu_seconds
                .map(|seconds| format!("{seconds:.2}"))
        ),
        optional(per_cpu_second),
        optional(
            run.broker_cpu_seconds
                .map(|seconds| format!("{seconds:.2}"))
        ),
        run.output_rows,
        optional(run.output_digest.map(|digest| format!("{digest:016x}"))),
        run.checkpoints,
        optional(checkpoint_id),
        optional(checkpoint_ms),
        optional(checkpoint_bytes),
        optional(topic),
    );
    Ok(())
}

fn main() {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let config = GeneratorConfig {
        seed: options.seed,
        max_events: options.events,
        events_per_second: options.events_per_second,
        ..GeneratorConfig::default()
    };
    let generator = match Generator::new(config) {
        Ok(generator) => generator,
        Err(error) => {
            eprintln!("generator: {error}");
            std::process::exit(2);
        }
    };
    for query in &options.queries {
        if let Err(message) = run(query, &generator, &options) {
            eprintln!("{message}");
            std::process::exit(1);
        }
    }
}
