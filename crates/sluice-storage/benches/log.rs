//! Partition-log throughput beside a plain file loop on the same disk, in the same run.
//!
//! Run with `cargo bench -p sluice-storage --bench log` (or `bench/log-throughput.sh`,
//! which also prints the log/plain table). Results and how to read them:
//! `docs/benchmarks.md`.
//!
//! - `append-16KiB` / `append-1MiB`: 1 KiB records in batches of 16 / 1024 records,
//!   appended with `Log::append_as_leader` to a fresh log until 64 MiB are written;
//!   `plain` is `File::write_all` of the same batch bytes to a fresh file in the same
//!   directory. No fsync in the loop (page cache). `crc-only` is the CRC32C re-check that
//!   `append_as_leader` does per batch, alone, over the same bytes (a bound, not I/O).
//!   `log-roll-16MiB` is the log with 16 MiB segments: 64 MiB of appends roll 4 times,
//!   and each roll fsyncs the segment it closes before the append returns.
//! - `append-*-fsync`: the same, with one `Log::flush` / `File::sync_data` at the end.
//! - `read-16KiB` / `read-1MiB`: a sequential walk of a 64 MiB log with
//!   `Log::read(offset, 1 MiB, None, true)`, next offset from the last batch returned;
//!   `plain` is a `read()` loop of the same segment file into one reused 1 MiB buffer;
//!   `plain-fresh-buf` allocates a zeroed 1 MiB buffer per read, as `Log::read` does;
//!   `alloc-zeroed-only` is that allocation and zeroing alone, without reading.
//!   `log-inactive` reads the same bytes from a rolled (inactive) segment: each read
//!   opens the segment file and binary-searches the index file with `pread`s;
//!   `plain-inactive` is the plain loop over that segment's file.
//!   The page cache is warm for both: the file is read once before measuring, and
//!   criterion's warm-up reads it again.
//! - `validate-16KiB`: `RecordBatch::validate` of one batch of 16 x 1 KiB records,
//!   uncompressed, lz4 and zstd; throughput counts the uncompressed batch bytes.
//!
//! Temporary files go under `target/sluice-bench` (the repository's disk, not a tmpfs
//! `/tmp`), or under `$SLUICE_BENCH_DIR` when set.

use std::fs::File;
use std::hint::black_box;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput, measurement::WallTime};
use sluice_protocol::{Compression, NewRecord, RecordBatch, RecordBatchBuilder, batches};
use sluice_storage::{Log, LogConfig, LogOpenOptions};

const MIB: usize = 1024 * 1024;
/// Bytes written or read per timed iteration.
const DATA_BYTES: usize = 64 * MIB;
const RECORD_VALUE_BYTES: usize = 1024;
const READ_CHUNK: usize = MIB;
const TIMESTAMP: i64 = 1_700_000_000_000;

fn bench_root() -> PathBuf {
    let root = std::env::var_os("SLUICE_BENCH_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/sluice-bench"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&root).expect("create the bench directory");
    root
}

fn fresh_dir(root: &Path) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(root)
        .expect("create a temporary directory")
}

/// The topic config of every bench: defaults, except `max.message.bytes` raised to
/// 2 MiB so that a batch of 1024 x 1 KiB records (1 MiB + record overhead) is accepted.
fn config() -> LogConfig {
    LogConfig {
        max_message_bytes: 2 * MIB as u32,
        ..LogConfig::default()
    }
}

/// `config()` with 16 MiB segments, so that 64 MiB of appends roll 4 times.
fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 16 * MIB as u32,
        ..config()
    }
}

/// A 1 KiB JSON-like value: compressible roughly as application events are.
fn value(seed: u64) -> Bytes {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut out = String::with_capacity(RECORD_VALUE_BYTES + 128);
    while out.len() < RECORD_VALUE_BYTES {
        let n = next();
        out.push_str(&format!(
            "{{\"user\":\"user-{}\",\"event\":\"{}\",\"amount\":{}.{:02},\"session\":\"{:08x}\"}},",
            n % 10_000,
            ["click", "view", "purchase", "scroll"][(n % 4) as usize],
            n % 1000,
            n % 100,
            next()
        ));
    }
    out.truncate(RECORD_VALUE_BYTES);
    Bytes::from(out)
}

/// One producer batch of `records` records of 1 KiB values with 8-byte keys.
fn batch(records: usize, compression: Compression) -> Bytes {
    let mut builder = RecordBatchBuilder::new(compression);
    for i in 0..records {
        builder
            .append(&NewRecord {
                timestamp: TIMESTAMP + i as i64,
                key: Some(Bytes::copy_from_slice(&(i as u64).to_be_bytes())),
                value: Some(value(i as u64)),
                headers: vec![],
            })
            .expect("a record the batch can hold");
    }
    builder.build()
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
}

/// Appends `count` copies of `batch` to a fresh log per iteration; times the appends
/// (and the final flush when `fsync`), not the open or the cleanup.
fn time_log_appends(
    root: &Path,
    config: &LogConfig,
    batch: &[u8],
    count: usize,
    fsync: bool,
    iters: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = fresh_dir(root);
        let mut log =
            Log::open(dir.path(), config.clone(), LogOpenOptions::default()).expect("open log");
        let mut buffer = batch.to_vec();
        // Untimed: the first append of a leader epoch writes and fsyncs the
        // leader-epoch checkpoint (once per epoch; `--paired` measures it).
        log.append_as_leader(&mut buffer, 0, TIMESTAMP)
            .expect("append");
        let start = Instant::now();
        for _ in 0..count {
            black_box(
                log.append_as_leader(&mut buffer, 0, TIMESTAMP)
                    .expect("append"),
            );
        }
        if fsync {
            log.flush().expect("flush");
        }
        total += start.elapsed();
        assert_eq!(log.size_bytes(), (batch.len() * (count + 1)) as u64);
        drop(log);
        drop(dir);
    }
    total
}

/// Writes `count` copies of `batch` to a fresh file per iteration with `write_all`.
fn time_plain_writes(root: &Path, batch: &[u8], count: usize, fsync: bool, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = fresh_dir(root);
        let mut file = File::create(dir.path().join("plain.log")).expect("create file");
        file.write_all(batch).expect("write"); // untimed, as the log's first append
        let start = Instant::now();
        for _ in 0..count {
            file.write_all(batch).expect("write");
        }
        if fsync {
            file.sync_data().expect("fsync");
        }
        total += start.elapsed();
        drop(file);
        drop(dir);
    }
    total
}

fn append_benches(c: &mut Criterion) {
    let root = bench_root();
    for (name, records) in [("16KiB", 16usize), ("1MiB", 1024)] {
        let batch = batch(records, Compression::None);
        let count = DATA_BYTES / batch.len();
        let bytes = (batch.len() * count) as u64;
        eprintln!(
            "append-{name}: batch of {records} records = {} bytes, {count} batches = {bytes} bytes per iteration",
            batch.len()
        );
        for fsync in [false, true] {
            let group_name = if fsync {
                format!("append-{name}-fsync")
            } else {
                format!("append-{name}")
            };
            let mut group = c.benchmark_group(group_name);
            configure(&mut group);
            group.throughput(Throughput::Bytes(bytes));
            group.bench_function("log", |b| {
                b.iter_custom(|iters| {
                    time_log_appends(&root, &config(), &batch, count, fsync, iters)
                })
            });
            group.bench_function("plain", |b| {
                b.iter_custom(|iters| time_plain_writes(&root, &batch, count, fsync, iters))
            });
            if !fsync {
                // Rolls every 16 MiB: each roll fsyncs the old segment inside the append.
                group.bench_function("log-roll-16MiB", |b| {
                    b.iter_custom(|iters| {
                        time_log_appends(&root, &small_segments(), &batch, count, false, iters)
                    })
                });
                // The per-batch CRC32C re-check of append_as_leader, alone.
                group.bench_function("crc-only", |b| {
                    b.iter(|| {
                        let mut acc = 0u32;
                        for _ in 0..count {
                            // The CRC covers the batch from its attributes (byte 21) on.
                            acc ^= crc32c::crc32c(black_box(&batch[21..]));
                        }
                        acc
                    })
                });
            }
            group.finish();
        }
    }
}

/// A 64 MiB log of `batch` copies, kept open: `log` has them in its active segment;
/// `rolled` holds the same bytes in an inactive segment (rolled after the appends), so
/// its reads open the segment file and search the index file per read.
struct ReadFixture {
    _dirs: [tempfile::TempDir; 2],
    log: Log,
    rolled: Log,
    segment: PathBuf,
    rolled_segment: PathBuf,
    size: u64,
}

fn build_log(root: &Path, batch: &[u8], roll: bool) -> (tempfile::TempDir, Log) {
    let dir = fresh_dir(root);
    let mut log = Log::open(dir.path(), config(), LogOpenOptions::default()).expect("open log");
    let mut buffer = batch.to_vec();
    for _ in 0..DATA_BYTES / batch.len() {
        log.append_as_leader(&mut buffer, 0, TIMESTAMP)
            .expect("append");
    }
    log.flush().expect("flush");
    if roll {
        log.roll(log.log_end_offset(), TIMESTAMP).expect("roll");
        assert!(!log.segments()[0].active);
    }
    // Warm the page cache (it should already hold the pages just written).
    let segment = &log.segments()[0];
    let read = plain_read(&segment.path, &mut vec![0; READ_CHUNK]);
    assert_eq!(read, segment.size_bytes);
    (dir, log)
}

fn read_fixture(root: &Path, batch: &[u8]) -> ReadFixture {
    let (dir, log) = build_log(root, batch, false);
    let (rolled_dir, rolled) = build_log(root, batch, true);
    let segments = log.segments();
    assert_eq!(segments.len(), 1, "the fixture is one segment");
    assert_eq!(rolled.size_bytes(), log.size_bytes());
    ReadFixture {
        _dirs: [dir, rolled_dir],
        segment: segments[0].path.clone(),
        rolled_segment: rolled.segments()[0].path.clone(),
        size: log.size_bytes(),
        log,
        rolled,
    }
}

/// Walks the log from its start with 1 MiB reads; returns the record bytes delivered.
fn log_read_all(log: &Log) -> u64 {
    let end = log.log_end_offset();
    let mut offset = log.log_start_offset();
    let mut delivered = 0u64;
    while offset < end {
        let data = log
            .read(offset, READ_CHUNK as u64, None, true)
            .expect("read");
        delivered += data.records.len() as u64;
        let last = batches(data.records.clone())
            .last()
            .expect("a read returns at least one batch")
            .expect("whole batches");
        offset = last.next_offset();
        black_box(&data.records);
    }
    delivered
}

/// `read()`s the whole file into `buffer`, chunk by chunk.
fn plain_read(path: &Path, buffer: &mut [u8]) -> u64 {
    let mut file = File::open(path).expect("open");
    let mut total = 0u64;
    loop {
        let n = file.read(buffer).expect("read");
        if n == 0 {
            return total;
        }
        black_box(&buffer[..n]);
        total += n as u64;
    }
}

/// Like `plain_read`, but with a fresh zeroed 1 MiB buffer per read (what `Log::read`
/// allocates), frozen into `Bytes`.
fn plain_read_fresh_buffers(path: &Path, size: u64) -> u64 {
    let file = File::open(path).expect("open");
    let mut position = 0u64;
    while position < size {
        let length = (READ_CHUNK as u64).min(size - position) as usize;
        let mut buffer = BytesMut::zeroed(length);
        file.read_exact_at(&mut buffer, position).expect("read");
        black_box(buffer.freeze());
        position += length as u64;
    }
    position
}

/// Only what `Log::read` adds to a read into a reused buffer: a fresh zeroed 1 MiB
/// buffer per read, for the same number of bytes, with no I/O.
fn alloc_zeroed_only(size: u64) -> u64 {
    let mut position = 0u64;
    while position < size {
        let length = (READ_CHUNK as u64).min(size - position) as usize;
        black_box(BytesMut::zeroed(length).freeze());
        position += length as u64;
    }
    position
}

fn read_benches(c: &mut Criterion) {
    let root = bench_root();
    for (name, records) in [("16KiB", 16usize), ("1MiB", 1024)] {
        let fixture = read_fixture(&root, &batch(records, Compression::None));
        for log in [&fixture.log, &fixture.rolled] {
            assert_eq!(
                log_read_all(log),
                fixture.size,
                "the walk delivers every byte once"
            );
        }
        let mut group = c.benchmark_group(format!("read-{name}"));
        configure(&mut group);
        group.throughput(Throughput::Bytes(fixture.size));
        group.bench_function("log", |b| b.iter(|| log_read_all(&fixture.log)));
        group.bench_function("log-inactive", |b| b.iter(|| log_read_all(&fixture.rolled)));
        let mut rolled_buffer = vec![0u8; READ_CHUNK];
        group.bench_function("plain-inactive", |b| {
            b.iter(|| plain_read(&fixture.rolled_segment, &mut rolled_buffer))
        });
        let mut buffer = vec![0u8; READ_CHUNK];
        group.bench_function("plain", |b| {
            b.iter(|| plain_read(&fixture.segment, &mut buffer))
        });
        group.bench_function("plain-fresh-buf", |b| {
            b.iter(|| plain_read_fresh_buffers(&fixture.segment, fixture.size))
        });
        group.bench_function("alloc-zeroed-only", |b| {
            b.iter(|| alloc_zeroed_only(fixture.size))
        });
        group.finish();
    }
}

fn validate_benches(c: &mut Criterion) {
    let uncompressed = batch(16, Compression::None);
    let mut group = c.benchmark_group("validate-16KiB");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Bytes(uncompressed.len() as u64));
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let bytes = batch(16, compression);
        eprintln!(
            "validate-16KiB/{}: {} bytes on the wire for {} uncompressed",
            compression.name(),
            bytes.len(),
            uncompressed.len()
        );
        let batch = RecordBatch::new(bytes).expect("a batch");
        batch.validate().expect("valid");
        group.bench_function(compression.name(), |b| {
            b.iter(|| black_box(&batch).validate().expect("valid"))
        });
    }
    group.finish();
}

/// Sequential criterion runs of `log` then `plain` on a busy machine can land in
/// different load. This mode (`--paired[=ROUNDS]`, default 30) runs the log and its
/// counterpart alternately (log first in even rounds, second in odd ones) and prints
/// the median MiB/s of each, the median of the per-round ratios and its interquartile
/// range; then the cost of the first append of a new leader epoch.
fn paired(rounds: usize) {
    let root = bench_root();
    let mib_per_s = |bytes: u64, d: Duration| bytes as f64 / d.as_secs_f64() / MIB as f64;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    println!();
    println!("Paired run: {rounds} rounds, log and counterpart alternated; medians");
    println!(
        "{:<20} {:<16} {:>10} {:>12} {:>8} {:>10}",
        "pair", "counterpart", "log MiB/s", "other MiB/s", "ratio", "IQR"
    );
    let report = |pair: &str,
                  other_name: &str,
                  bytes: u64,
                  log: &mut dyn FnMut() -> Duration,
                  other: &mut dyn FnMut() -> Duration| {
        log();
        other();
        let (mut logs, mut others, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let (l, o) = if round % 2 == 0 {
                let l = log();
                (l, other())
            } else {
                let o = other();
                (log(), o)
            };
            logs.push(mib_per_s(bytes, l));
            others.push(mib_per_s(bytes, o));
            ratios.push(o.as_secs_f64() / l.as_secs_f64() * 100.0);
        }
        let (l, o, r) = (median(&mut logs), median(&mut others), median(&mut ratios));
        let iqr = format!("{:.0}-{:.0}%", ratios[rounds / 4], ratios[rounds * 3 / 4]);
        println!("{pair:<20} {other_name:<16} {l:>10.0} {o:>12.0} {r:>7.0}% {iqr:>10}");
    };
    let timed = |f: &mut dyn FnMut() -> u64| {
        let start = Instant::now();
        black_box(f());
        start.elapsed()
    };
    for (name, records) in [("16KiB", 16usize), ("1MiB", 1024)] {
        let batch = batch(records, Compression::None);
        let count = DATA_BYTES / batch.len();
        let bytes = (batch.len() * count) as u64;
        for fsync in [false, true] {
            report(
                &format!("append-{name}{}", if fsync { "-fsync" } else { "" }),
                "plain",
                bytes,
                &mut || time_log_appends(&root, &config(), &batch, count, fsync, 1),
                &mut || time_plain_writes(&root, &batch, count, fsync, 1),
            );
        }
        report(
            &format!("append-{name} roll16M"),
            "plain",
            bytes,
            &mut || time_log_appends(&root, &small_segments(), &batch, count, false, 1),
            &mut || time_plain_writes(&root, &batch, count, false, 1),
        );
    }
    for (name, records) in [("16KiB", 16usize), ("1MiB", 1024)] {
        let fixture = read_fixture(&root, &batch(records, Compression::None));
        let (log, segment, size) = (&fixture.log, &fixture.segment, fixture.size);
        let mut buffer = vec![0u8; READ_CHUNK];
        let pair = format!("read-{name}");
        let mut log_read = || timed(&mut || log_read_all(log));
        report(&pair, "plain", size, &mut log_read, &mut || {
            timed(&mut || plain_read(segment, &mut buffer))
        });
        report(&pair, "plain-fresh-buf", size, &mut log_read, &mut || {
            timed(&mut || plain_read_fresh_buffers(segment, size))
        });
        let (rolled, rolled_segment) = (&fixture.rolled, &fixture.rolled_segment);
        report(
            &format!("{pair} inactive"),
            "plain",
            size,
            &mut || timed(&mut || log_read_all(rolled)),
            &mut || timed(&mut || plain_read(rolled_segment, &mut buffer)),
        );
    }
    // The first append of a leader epoch persists the leader-epoch checkpoint
    // (write, fsync, rename, fsync of the directory); later appends do not.
    let batch = batch(16, Compression::None);
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let dir = fresh_dir(&root);
        let mut log = Log::open(dir.path(), config(), LogOpenOptions::default()).expect("open");
        let mut buffer = batch.to_vec();
        for times in [&mut first, &mut second] {
            let start = Instant::now();
            log.append_as_leader(&mut buffer, 0, TIMESTAMP)
                .expect("append");
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    println!(
        "first append of leader epoch 0 (16 KiB batch): median {:.0} µs; the next append: {:.0} µs",
        median(&mut first),
        median(&mut second)
    );
}

fn main() {
    if let Some(arg) = std::env::args().find(|a| a.starts_with("--paired")) {
        let rounds = arg
            .strip_prefix("--paired=")
            .map_or(30, |n| n.parse().expect("--paired=ROUNDS"));
        paired(rounds.max(4));
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    append_benches(&mut criterion);
    read_benches(&mut criterion);
    validate_benches(&mut criterion);
    criterion.final_summary();
}
