//! `sluice dump-log` prints what Kafka's DumpLogSegments prints. The expected output was
//! produced by Kafka 4.1.1's tool on the Kafka-written fixtures:
//!
//! ```text
//! java -cp 'compat/kafka/libs/*' kafka.tools.DumpLogSegments --deep-iteration \
//!   --print-data-log --files <every fixture .log/.index/.timeindex, sorted, comma-joined>
//! ```
//!
//! (`compat/run.sh` also diffs the two tools live, on Sluice-written logs.)

use std::path::Path;
use std::process::Command;

#[test]
fn output_matches_kafkas_dump_log_segments_on_kafka_fixtures() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<String> = Vec::new();
    let fixtures = workspace.join("crates/sluice-storage/tests/fixtures/kafka");
    for dir in std::fs::read_dir(&fixtures).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            let relative = file
                .strip_prefix(&workspace)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            files.push(relative);
        }
    }
    files.sort();
    assert_eq!(files.len(), 30);
    let output = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .current_dir(&workspace)
        .args(["dump-log", "--print-data-log", "--files", &files.join(",")])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kafka-dump-log.txt"),
    )
    .unwrap();
    let actual = String::from_utf8(output.stdout).unwrap();
    for (line, (got, want)) in actual.lines().zip(expected.lines()).enumerate() {
        assert_eq!(got, want, "line {}", line + 1);
    }
    assert_eq!(actual.lines().count(), expected.lines().count());
}

#[test]
fn unreadable_input_is_an_error_not_a_panic() {
    let temp = tempfile::tempdir().unwrap();
    let garbage = temp.path().join("00000000000000000000.log");
    std::fs::write(&garbage, [0xffu8; 100]).unwrap();
    let not_a_segment = temp.path().join("notes.txt");
    std::fs::write(&not_a_segment, "hello").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["dump-log", "--deep-iteration", "--files"])
        .arg(format!("{},{}", garbage.display(), not_a_segment.display()))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Found 100 invalid bytes"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("notes.txt"), "{stderr}");
}

/// A producer snapshot prints as Kafka's tool prints one (its line for an idempotent
/// producer, seen on Kafka 4.1.1; `compat/run.sh` diffs the two tools on a live node's
/// snapshot), and a corrupt one is an error.
#[test]
fn producer_snapshots_print_as_kafka_prints_them() {
    use sluice_storage::producer_state::{SnapshotEntry, encode_snapshot};
    let temp = tempfile::tempdir().unwrap();
    let snapshot = temp.path().join("00000000000000000010.snapshot");
    std::fs::write(
        &snapshot,
        encode_snapshot(&[SnapshotEntry {
            producer_id: 7,
            epoch: 2,
            last_sequence: 9,
            last_offset: 9,
            offset_delta: 9,
            timestamp: 1_795_996_359_818,
            coordinator_epoch: -1,
            current_txn_first_offset: -1,
        }]),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["dump-log", "--files"])
        .arg(&snapshot)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!(
            "Dumping {}\nproducerId: 7 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1795996359818 firstSequence: 0 lastSequence: 9 lastOffset: 9 offsetDelta: 9 timestamp: 1795996359818\n",
            snapshot.display()
        )
    );
    std::fs::write(&snapshot, [0u8, 1, 2]).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["dump-log", "--files"])
        .arg(&snapshot)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
}
