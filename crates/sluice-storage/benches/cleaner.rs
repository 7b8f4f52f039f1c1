//! Log-cleaner throughput: one full pass (`Log::clean`: offset map, rewrite, swap) over a
//! freshly written compacted log.
//!
//! Run with `cargo bench -p sluice-storage --bench cleaner`. Results: `docs/benchmarks.md`.
//!
//! - `clean-64MiB/<codec>/<keys>`: 64 MiB of 100-byte values (random lowercase letters,
//!   so lz4 batches compress about as text does) in batches of 100 records,
//!   keys drawn round-robin from a key space of `keys` keys (so each key is rewritten
//!   many times), 8 MiB segments, the last segment active; one pass with a 128 MiB offset
//!   map. Throughput counts the bytes the pass read. The log is rebuilt outside the timing
//!   for every iteration (`iter_batched`, one pass per log).
//!
//! Temporary files go under `target/sluice-bench` (or `$SLUICE_BENCH_DIR`).

use std::path::{Path, PathBuf};

use bytes::Bytes;
use criterion::{BatchSize, Criterion, Throughput};
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};
use sluice_storage::{Log, LogConfig, LogOpenOptions};

const MIB: usize = 1024 * 1024;
const DATA_BYTES: usize = 64 * MIB;
const VALUE_BYTES: usize = 100;
const BATCH_RECORDS: usize = 100;
const TIMESTAMP: i64 = 1_700_000_000_000;

fn bench_root() -> PathBuf {
    let root = std::env::var_os("SLUICE_BENCH_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/sluice-bench"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&root).expect("create the bench directory");
    root
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 8 * MIB as u32,
        cleanup_compact: true,
        cleanup_delete: false,
        min_cleanable_dirty_ratio: 0.0,
        ..LogConfig::default()
    }
}

/// A compacted log of about `DATA_BYTES` with `keys` distinct keys; returns it, its
/// directory and the bytes of its closed segments.
fn build(root: &Path, codec: Compression, keys: usize) -> (Log, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .prefix("cleaner-")
        .tempdir_in(root)
        .expect("a temporary directory");
    let mut log = Log::open(dir.path(), config(), LogOpenOptions::default()).expect("open");
    // Values of random lowercase letters (xorshift): about as compressible as text, so a
    // compressed log holds a realistic amount of record data.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut value = move || {
        let letters: Vec<u8> = (0..VALUE_BYTES)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                b'a' + (state % 26) as u8
            })
            .collect();
        Bytes::from(letters)
    };
    let mut written = 0;
    let mut next_key = 0usize;
    while written < DATA_BYTES {
        let mut builder = RecordBatchBuilder::new(codec);
        for i in 0..BATCH_RECORDS {
            builder
                .append(&NewRecord {
                    timestamp: TIMESTAMP + i as i64,
                    key: Some(Bytes::from(format!("key-{:08}", next_key % keys))),
                    value: Some(value()),
                    headers: vec![],
                })
                .expect("a record");
            next_key += 1;
        }
        let mut bytes = builder.build().to_vec();
        written += bytes.len();
        log.append_as_leader(&mut bytes, 0, TIMESTAMP)
            .expect("append");
    }
    let end = log.log_end_offset();
    log.roll(end, TIMESTAMP).expect("roll");
    (log, dir)
}

fn bench(c: &mut Criterion) {
    let root = bench_root();
    let mut group = c.benchmark_group("clean-64MiB");
    group.sample_size(10);
    for codec in [Compression::None, Compression::Lz4] {
        for keys in [1_000usize, 100_000] {
            let (probe, _dir) = build(&root, codec, keys);
            let bytes: u64 = probe.segments().iter().map(|s| s.size_bytes).sum();
            drop(probe);
            group.throughput(Throughput::Bytes(bytes));
            let name = format!("{}/{keys}", codec.name());
            group.bench_function(name, |b| {
                b.iter_batched(
                    || build(&root, codec, keys),
                    |(mut log, dir)| {
                        let end = log.log_end_offset();
                        let stats = log
                            .clean(0, end, TIMESTAMP, 128 * MIB)
                            .expect("clean")
                            .expect("a pass");
                        assert!(stats.bytes_written < stats.bytes_read);
                        (log, dir)
                    },
                    BatchSize::PerIteration,
                );
            });
        }
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
