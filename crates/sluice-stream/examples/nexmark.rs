//! The Nexmark benchmark driver behind `bench/nexmark`: runs the queries of
//! `sluice_stream::nexmark::queries` over generated events and prints one line per query.
//!
//! ```text
//! cargo run --release -p sluice-stream --example nexmark -- \
//!     --query q0|q1|q2|q3|q4|q5|q7|q8|q11|q12|all --events N \
//!     [--source memory] [--checkpoint-interval-ms 10000] [--checkpoint-dir DIR] [--seed S]
//!     [--events-per-second 10000]
//! ```
//!
//! `--events-per-second` is the generator's event-time rate (the reference default,
//! 10,000): it sets how many events a 10 s window holds, so the state the windowed queries
//! keep. Flink Nexmark's published runs generate at 10 M events/s, so their windows hold
//! a thousand times more events than the default's.
//!
//! What it measures: the job's `execute` only. Before each query the events are
//! generated (the reference generator's defaults: 1:3:46 people, auctions and bids at
//! 10,000 events/s of event time) into a `CollectionSource`, so generation is not in the
//! figure (its time is printed as `generate_seconds`: Flink Nexmark's figures include its
//! in-job generator source), but the source's clone of each event as it emits it is
//! (`CollectionSource` replays a script and keeps it for restarts). Watermarks are
//! Flink's `forMonotonousTimestamps`, emitted every 200 ms; every query's output goes to
//! a sink that only counts rows. The executor is single-threaded, so events per
//! CPU-second of the process is the per-core figure; wall-clock events/s is printed
//! beside it because the machine may be shared.
//!
//! Checkpoints go to `DIR/<query>` (emptied first, so a run never restores an earlier
//! one), the newest one kept. Their duration is read back from the directory: from the
//! trigger time recorded in the checkpoint to the modification time of its `_metadata`
//! (written and renamed last), so it covers the snapshot, its JSON encoding and the
//! fsyncs, to within a few milliseconds (mtimes come from the kernel's coarse clock). The
//! executor is synchronous: processing stops for that long.
//!
//! Output, one line per query, whitespace-separated `key=value` fields:
//! `query= events= generate_seconds= seconds= events_per_second= cpu_seconds=
//! events_per_cpu_second= output_rows= checkpoints= last_checkpoint_id=
//! last_checkpoint_ms= last_checkpoint_bytes=`
//! (`-` where there is no value: no checkpoint completed, or no `/proc`).
//!
//! What it is not (yet): `--source kafka` (reading JSON events from a Sluice topic) is
//! not built; the option is rejected with a message rather than ignored.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use sluice_stream::nexmark::queries;
use sluice_stream::nexmark::{Event, Generator, GeneratorConfig};
use sluice_stream::{
    CollectionSource, DataStream, DirectoryCheckpointStorage, Sink, StreamError,
    StreamExecutionEnvironment, WatermarkStrategy,
};

const QUERIES: [&str; 10] = ["q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q11", "q12"];
/// Bounds the in-memory stream: at a few hundred bytes per event, 50 M events is ~15 GB.
const EVENTS_MAX: u64 = 50_000_000;

/// The newest completed checkpoint of a run, as read back from its directory.
struct CompletedCheckpointSummary {
    checkpoint_id: u64,
    /// From the trigger to the `_metadata` rename.
    duration_ms: i64,
    /// `state.json` plus `_metadata`.
    size_bytes: u64,
}

/// Counts rows; keeps none.
struct CountingSink {
    rows: Rc<Cell<u64>>,
}

impl<T: 'static> Sink<T> for CountingSink {
    fn write(&mut self, _value: T, _timestamp: Option<i64>) -> Result<(), StreamError> {
        self.rows.set(self.rows.get() + 1);
        Ok(())
    }
}

struct Options {
    queries: Vec<String>,
    events: u64,
    seed: u64,
    events_per_second: u64,
    checkpoint_interval_ms: u64,
    checkpoint_dir: PathBuf,
}

fn usage() -> String {
    "usage: nexmark --query q0|q1|q2|q3|q4|q5|q7|q8|q11|q12|all --events N \
     [--source memory] [--checkpoint-interval-ms MS] [--checkpoint-dir DIR] [--seed S] [--events-per-second R]"
        .to_string()
}

fn parse_options() -> Result<Options, String> {
    let mut query = None;
    let mut events = 1_000_000_u64;
    let mut seed = 0_u64;
    let mut events_per_second = GeneratorConfig::default().events_per_second;
    let mut checkpoint_interval_ms = 10_000_u64;
    let mut checkpoint_dir = std::env::temp_dir().join("sluice-nexmark-checkpoints");
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
            "--source" => match value()?.as_str() {
                "memory" => {}
                "kafka" => {
                    return Err("--source kafka is not built yet: only memory".to_string());
                }
                other => return Err(format!("unknown source {other}\n{}", usage())),
            },
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
    Ok(Options {
        queries,
        events,
        seed,
        events_per_second,
        checkpoint_interval_ms,
        checkpoint_dir,
    })
}

/// Adds `query` over `events` to the job, its output into a counting sink.
fn add_query(query: &str, events: &DataStream<Event>, rows: &Rc<Cell<u64>>) {
    let sink = || CountingSink { rows: rows.clone() };
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

/// User plus system CPU time of this process, from `/proc/self/stat` (Linux); `None`
/// elsewhere.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces; the fields after its closing parenthesis do not.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let user_ticks: u64 = fields.get(11)?.parse().ok()?;
    let system_ticks: u64 = fields.get(12)?.parse().ok()?;
    // Linux reports in USER_HZ, 100 on every mainstream architecture.
    Some((user_ticks + system_ticks) as f64 / 100.0)
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
    output_rows: u64,
    checkpoints: u64,
    last_checkpoint: Option<CompletedCheckpointSummary>,
}

fn run_query(query: &str, events: Vec<Event>, options: &Options) -> Result<QueryRun, String> {
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
    let source = env.from_source(
        CollectionSource::of(events),
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|event: &Event, _| event.timestamp_ms()),
        "nexmark-generator",
    );
    let rows = Rc::new(Cell::new(0));
    add_query(query, &source, &rows);
    let cpu_before = process_cpu_seconds();
    let started = Instant::now();
    let result = env
        .execute(&format!("nexmark-{query}"))
        .map_err(|error| format!("{query}: {error}"))?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = cpu_before
        .zip(process_cpu_seconds())
        .map(|(before, after)| after - before);
    Ok(QueryRun {
        seconds,
        cpu_seconds,
        output_rows: rows.get(),
        checkpoints: result.num_completed_checkpoints,
        last_checkpoint: last_checkpoint(&checkpoint_root)?,
    })
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
        // Generated again for each query rather than cloned: one copy in memory at a time
        // (~450 bytes per event with the source's buffer; 5 M events is ~2.3 GB).
        let generating = Instant::now();
        let events: Vec<Event> = generator.clone().collect();
        eprintln!(
            "{query}: generated {} events in {:.2} s",
            events.len(),
            generating.elapsed().as_secs_f64()
        );
        let events_count = events.len();
        let generate_seconds = generating.elapsed().as_secs_f64();
        match run_query(query, events, &options) {
            Ok(run) => {
                let events_count = events_count as f64;
                let per_cpu_second = run
                    .cpu_seconds
                    .filter(|seconds| *seconds > 0.0)
                    .map(|seconds| format!("{:.0}", events_count / seconds))
                    .unwrap_or_else(|| "-".to_string());
                let (checkpoint_id, checkpoint_ms, checkpoint_bytes) = match &run.last_checkpoint {
                    Some(summary) => (
                        summary.checkpoint_id.to_string(),
                        summary.duration_ms.to_string(),
                        summary.size_bytes.to_string(),
                    ),
                    None => ("-".to_string(), "-".to_string(), "-".to_string()),
                };
                println!(
                    "query={query} events={} generate_seconds={generate_seconds:.3} \
                     seconds={:.3} events_per_second={:.0} \
                     cpu_seconds={} events_per_cpu_second={per_cpu_second} output_rows={} \
                     checkpoints={} last_checkpoint_id={checkpoint_id} last_checkpoint_ms={checkpoint_ms} \
                     last_checkpoint_bytes={checkpoint_bytes}",
                    events_count,
                    run.seconds,
                    events_count / run.seconds,
                    run.cpu_seconds
                        .map(|seconds| format!("{seconds:.2}"))
                        .unwrap_or_else(|| "-".to_string()),
                    run.output_rows,
                    run.checkpoints,
                );
            }
            Err(message) => {
                eprintln!("{message}");
                std::process::exit(1);
            }
        }
    }
}
