//! A process for the crash tests (`tests/crash.rs`): appends batches to one partition
//! through a `LogManager` and reports on stdout, one line per append, what it
//! acknowledged: `acked <first offset> <last offset> <recovery point>`. The test kills it
//! with SIGKILL at a random point and checks what survives.
//!
//! Usage: `log-append-child <log dir> <flush.messages> <segment.bytes> <seed> <max appends>`.
//! Record `i` of the log has key `key-<i>` and value `value-<i>` padded to a varying
//! length, so any reader can check each record against its offset.

use std::io::Write;

use bytes::Bytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};
use sluice_storage::{LogConfig, LogManager, TopicPartition};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 6 {
        eprintln!(
            "usage: log-append-child <dir> <flush.messages> <segment.bytes> <seed> <max appends>"
        );
        std::process::exit(2);
    }
    let dir = std::path::PathBuf::from(&args[1]);
    let parse = |i: usize| -> u64 {
        args[i].parse().unwrap_or_else(|_| {
            eprintln!("argument {i} ({}) is not a number", args[i]);
            std::process::exit(2)
        })
    };
    let (flush_messages, segment_bytes, mut seed, max_appends) =
        (parse(2), parse(3), parse(4), parse(5));
    let config = LogConfig {
        flush_messages: flush_messages as i64,
        segment_bytes: segment_bytes as u32,
        index_interval_bytes: 512,
        ..LogConfig::default()
    };
    let mut manager = LogManager::open(&dir, config).expect("open the log dir");
    let partition = TopicPartition::new("crash", 0);
    let mut next_random = move || {
        // xorshift64*: deterministic per seed, no dependency.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let stdout = std::io::stdout();
    for append in 0..max_appends {
        let log = manager
            .get_or_create(&partition, None, None)
            .expect("open the partition");
        let mut log = sluice_storage::lock(&log);
        let first = log.log_end_offset();
        let count = 1 + next_random() % 20;
        let codec = Compression::ALL[(next_random() % 5) as usize];
        let mut builder = RecordBatchBuilder::new(codec);
        for offset in first..first + count as i64 {
            let padding = (next_random() % 300) as usize;
            builder
                .append(&NewRecord {
                    timestamp: 1_700_000_000_000 + offset,
                    key: Some(Bytes::from(format!("key-{offset}"))),
                    value: Some(Bytes::from(format!(
                        "value-{offset}-{}",
                        "x".repeat(padding)
                    ))),
                    headers: vec![],
                })
                .expect("timestamps are close together");
        }
        let mut bytes = builder.build().to_vec();
        let info = log
            .append_as_leader(&mut bytes, 0, sluice_storage::now_ms())
            .expect("append");
        let recovery_point = log.recovery_point();
        let mut out = stdout.lock();
        writeln!(
            out,
            "acked {} {} {}",
            info.first_offset, info.last_offset, recovery_point
        )
        .expect("stdout");
        out.flush().expect("stdout");
        drop(out);
        // The checkpoint locks every log: release this one first.
        drop(log);
        if append % 50 == 49 {
            manager.checkpoint().expect("checkpoint");
        }
    }
    manager.shutdown().expect("clean shutdown");
}
