//! Crash tests: a child process (`log-append-child`) appends and acknowledges batches;
//! the test SIGKILLs it at a random point, optionally damages what was not yet fsynced
//! (cuts or garbles the tail of the active segment, appends garbage) and the indexes of
//! any segment, then reopens the log directory as a restarted broker would.
//!
//! What must hold after every crash:
//! - with no damage: every acknowledged batch is intact (the page cache survives a
//!   killed process);
//! - with damage: every acknowledged batch below the recovery point (fsynced) is intact;
//! - nothing after the first invalid byte is served: what is served validates, has
//!   contiguous offsets from 0, and every record is the one written at its offset;
//! - the log accepts appends again (the next round's child continues the same log).
//!
//! Rounds are bounded in count and appends; the seed is printed and can be replayed with
//! `SLUICE_CRASH_SEED`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice_protocol::batches;
use sluice_storage::{LogConfig, LogManager, TopicPartition};

const CHILD: &str = env!("CARGO_BIN_EXE_log-append-child");
const ROUNDS: usize = 12;
const SEGMENT_BYTES: u64 = 64 * 1024;

#[derive(Debug, Default, Clone, Copy)]
struct Acked {
    last_offset: i64,
    recovery_point: i64,
}

/// Runs the child until it has acknowledged `kill_after` appends, then SIGKILLs it and
/// collects every acknowledgement it printed.
fn run_child_and_kill(
    dir: &Path,
    flush_messages: u64,
    seed: u64,
    kill_after: usize,
) -> Option<Acked> {
    let mut child = Command::new(CHILD)
        .arg(dir)
        .arg(flush_messages.to_string())
        .arg(SEGMENT_BYTES.to_string())
        .arg(seed.to_string())
        .arg("100000")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn log-append-child");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked = None;
    let mut seen = 0;
    let parse = |line: &str| -> Option<Acked> {
        let fields: Vec<i64> = line
            .strip_prefix("acked ")?
            .split(' ')
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        Some(Acked {
            last_offset: fields[1],
            recovery_point: fields[2],
        })
    };
    for line in lines.by_ref() {
        let line = line.expect("read child stdout");
        acked = parse(&line).or(acked);
        seen += 1;
        if seen >= kill_after {
            break;
        }
    }
    child.kill().expect("SIGKILL the child");
    // Lines printed before the kill are acknowledged too.
    for line in lines.map_while(Result::ok) {
        acked = parse(&line).or(acked);
    }
    let status = child.wait().expect("reap the child");
    assert!(!status.success(), "the child was killed, not finished");
    acked
}

fn segment_files(partition_dir: &Path) -> Vec<(i64, PathBuf)> {
    let mut segments: Vec<(i64, PathBuf)> = std::fs::read_dir(partition_dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name()?.to_str()?.to_string();
            let base = name.strip_suffix(".log")?.parse().ok()?;
            Some((base, path))
        })
        .collect();
    segments.sort();
    segments
}

/// Byte position in the last segment from which nothing is fsynced: the start of the
/// first batch at or after the recovery point.
fn unflushed_position(log_file: &Path, recovery_point: i64) -> u64 {
    let bytes = std::fs::read(log_file).unwrap();
    let mut position = 0u64;
    for batch in batches(Bytes::from(bytes)) {
        let Ok(batch) = batch else { break };
        if batch.base_offset() >= recovery_point {
            break;
        }
        position += batch.size_bytes() as u64;
    }
    position
}

/// Damages what a power loss may damage: the unflushed tail of the active segment, and
/// any index file.
fn damage(partition_dir: &Path, recovery_point: i64, rng: &mut StdRng) -> String {
    let segments = segment_files(partition_dir);
    let (_, active) = segments.last().unwrap();
    let from = unflushed_position(active, recovery_point);
    let length = std::fs::metadata(active).unwrap().len();
    let mut what = Vec::new();
    match rng.gen_range(0..4) {
        0 if length > from => {
            let cut = rng.gen_range(from..length);
            std::fs::OpenOptions::new()
                .write(true)
                .open(active)
                .unwrap()
                .set_len(cut)
                .unwrap();
            what.push(format!(
                "cut the active segment at {cut} (unflushed from {from}, length {length})"
            ));
        }
        1 if length > from => {
            let mut bytes = std::fs::read(active).unwrap();
            let at = rng.gen_range(from..length) as usize;
            let end = (at + rng.gen_range(1..64)).min(bytes.len());
            rng.fill(&mut bytes[at..end]);
            std::fs::write(active, bytes).unwrap();
            what.push(format!(
                "garbled bytes {at}..{end} of the active segment (unflushed from {from})"
            ));
        }
        2 => {
            let mut garbage = vec![0u8; rng.gen_range(1..200)];
            rng.fill(&mut garbage[..]);
            let mut bytes = std::fs::read(active).unwrap();
            bytes.extend_from_slice(&garbage);
            std::fs::write(active, bytes).unwrap();
            what.push(format!("appended {} garbage bytes", garbage.len()));
        }
        _ => what.push("left the log alone".into()),
    }
    for (base, _) in &segments {
        if !rng.gen_bool(0.3) {
            continue;
        }
        let suffix = if rng.gen_bool(0.5) {
            "index"
        } else {
            "timeindex"
        };
        let path = partition_dir.join(format!("{base:020}.{suffix}"));
        match rng.gen_range(0..3) {
            0 => {
                let _ = std::fs::remove_file(&path);
            }
            1 => std::fs::write(&path, [0xab; 7]).unwrap(),
            _ => {
                let mut junk = vec![0u8; 8 * rng.gen_range(1..8)];
                rng.fill(&mut junk[..]);
                std::fs::write(&path, junk).unwrap();
            }
        }
        what.push(format!("damaged {base:020}.{suffix}"));
    }
    what.join("; ")
}

/// Reopens the directory and checks the log; returns its log end offset.
fn check_log(dir: &Path, acked: Option<Acked>, intact_below: i64, context: &str) -> i64 {
    let manager = LogManager::open(dir, LogConfig::default()).unwrap();
    assert!(
        !manager.was_clean_start(),
        "{context}: a killed process leaves no marker"
    );
    let Some(log) = manager.get(&TopicPartition::new("crash", 0)) else {
        assert!(acked.is_none(), "{context}: acknowledged data but no log");
        return 0;
    };
    let log = sluice_storage::lock(&log);
    let mut offset = log.log_start_offset();
    assert_eq!(offset, 0);
    while offset < log.log_end_offset() {
        let data = log.read(offset, 1 << 20, None, true).unwrap();
        for batch in batches(data.records) {
            let batch = batch.unwrap_or_else(|e| panic!("{context}: served an invalid batch: {e}"));
            batch
                .validate()
                .unwrap_or_else(|e| panic!("{context}: served an invalid batch: {e}"));
            assert_eq!(
                batch.base_offset(),
                offset,
                "{context}: offsets are contiguous"
            );
            for record in batch.records().unwrap() {
                let record = record.unwrap();
                let record_offset = batch.base_offset() + i64::from(record.offset_delta);
                assert_eq!(
                    record.key.as_deref(),
                    Some(format!("key-{record_offset}").as_bytes()),
                    "{context}"
                );
                let value = record.value.unwrap();
                assert!(
                    value.starts_with(format!("value-{record_offset}-").as_bytes()),
                    "{context}: wrong record at {record_offset}"
                );
            }
            offset = batch.next_offset();
        }
    }
    let log_end_offset = log.log_end_offset();
    assert!(
        log_end_offset >= intact_below,
        "{context}: lost acknowledged data: log ends at {log_end_offset}, {intact_below} were acknowledged as intact"
    );
    log_end_offset
}

#[test]
fn acknowledged_writes_survive_sigkill_and_torn_tails() {
    let seed: u64 = std::env::var("SLUICE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("SLUICE_CRASH_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    let partition_dir = dir.join("crash-0");
    let mut log_end_offset = 0;
    for round in 0..ROUNDS {
        let flush_messages = [1u64, 7, 50, i64::MAX as u64][rng.gen_range(0..4)];
        let kill_after = rng.gen_range(1..400);
        let acked = run_child_and_kill(dir, flush_messages, rng.r#gen(), kill_after);
        let mut context = format!(
            "seed {seed} round {round} flush.messages={flush_messages} killed after {kill_after} acks"
        );
        let damaged = match acked {
            Some(state) if rng.gen_bool(0.5) => Some(state),
            _ => None,
        };
        let intact_below = match damaged {
            // Power-loss damage: only what was fsynced must be intact.
            Some(state) => {
                let what = damage(&partition_dir, state.recovery_point, &mut rng);
                context.push_str(&format!("; {what}"));
                state.recovery_point.max(0)
            }
            // Only the kill: everything acknowledged must be there.
            None => acked.map_or(log_end_offset, |a| a.last_offset + 1),
        };
        log_end_offset = check_log(dir, acked, intact_below, &context);
        // The next round's child appends after whatever recovery kept.
    }
    // And a final clean run appends and shuts down cleanly on the same log.
    let status = Command::new(CHILD)
        .arg(dir)
        .args(["1000000", &SEGMENT_BYTES.to_string(), "7", "20"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let manager = LogManager::open(dir, LogConfig::default()).unwrap();
    assert!(manager.was_clean_start());
    let log = manager.get(&TopicPartition::new("crash", 0)).unwrap();
    let log = sluice_storage::lock(&log);
    assert!(
        log.log_end_offset() > log_end_offset,
        "appends resumed after the crashes"
    );
}
