//! The bodies of the fuzz targets on this crate's file readers, one public function per
//! target, so `fuzz/` (cargo-fuzz, libFuzzer) and the replay test
//! `crates/sluice-broker/tests/fuzz_corpus.rs` run the same checks on the same bytes.
//!
//! Not an API: nothing in Sluice calls these. Each takes arbitrary bytes, writes them
//! as files in a scratch directory of its own (on tmpfs when there is one, so fsync is
//! free) and panics only when a reader breaks its contract, never because the files are
//! damaged.
//! `docs/fuzzing.md` says what each one checks.

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use sluice_protocol::{Compression, Header, NewRecord, RecordBatch, RecordBatchBuilder, batches};

use crate::checkpoint::{
    read_leader_epoch_checkpoint, read_offset_checkpoint, read_partition_metadata,
    write_leader_epoch_checkpoint, write_offset_checkpoint, write_partition_metadata,
};
use crate::end_txn_marker::{
    EndTxnMarker, TxnMarker, control_batch, decode_marker, marker_key, marker_value, read_marker,
};
use crate::transaction_index::{AbortedTxn, check_entries, decode_transaction_index};
use crate::{Log, LogConfig, LogOpenOptions, segment_file_name};

/// A directory of its own, removed when dropped. Each `new` makes another, so parallel
/// test threads never share one. A fuzz process that crashes or exits without
/// dropping it leaves it behind; the next process to make one removes those of
/// processes no longer running.
struct ScratchDir {
    path: PathBuf,
}

const SCRATCH_PREFIX: &str = "sluice-fuzz-";

impl ScratchDir {
    fn new() -> ScratchDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        static SWEEP: Once = Once::new();
        let shm = Path::new("/dev/shm");
        let root = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        SWEEP.call_once(|| remove_abandoned(&root));
        loop {
            let path = root.join(format!(
                "{SCRATCH_PREFIX}{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => return ScratchDir { path },
                // Left by an earlier process with the same id: take the next name.
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(error) => panic!("a scratch directory in {}: {error}", root.display()),
            }
        }
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Removes the scratch directories of processes that are gone (where `/proc` tells).
fn remove_abandoned(root: &Path) {
    let proc = Path::new("/proc");
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    if !proc.is_dir() {
        return;
    }
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(SCRATCH_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

thread_local! {
    // `checkpoints` reuses one directory per thread: making and removing one per input
    // would cost about as much as the rest of the target.
    static CHECKPOINTS_DIR: ScratchDir = ScratchDir::new();
}

/// Target `checkpoints`: feeds arbitrary bytes, as a file, to the readers of Kafka's
/// small text files: `recovery-point-offset-checkpoint` / `log-start-offset-checkpoint`,
/// `leader-epoch-checkpoint` and `partition.metadata`. None may panic, and whatever a
/// reader accepts must survive a write and a second read unchanged.
pub fn checkpoints(data: &[u8]) {
    let (input, output) =
        CHECKPOINTS_DIR.with(|dir| (dir.path.join("input"), dir.path.join("output")));
    std::fs::write(&input, data).expect("write the input file");

    if let Ok(entries) = read_offset_checkpoint(&input) {
        write_offset_checkpoint(&output, &entries).expect("write offset checkpoint");
        assert_eq!(
            read_offset_checkpoint(&output).expect("re-read offset checkpoint"),
            entries
        );
    }
    if let Ok(entries) = read_leader_epoch_checkpoint(&input) {
        write_leader_epoch_checkpoint(&output, &entries).expect("write leader epochs");
        assert_eq!(
            read_leader_epoch_checkpoint(&output).expect("re-read leader epochs"),
            entries
        );
    }
    match read_partition_metadata(&input) {
        Ok(Some(topic_id)) => {
            write_partition_metadata(&output, topic_id).expect("write partition metadata");
            assert_eq!(
                read_partition_metadata(&output).expect("re-read partition metadata"),
                Some(topic_id)
            );
        }
        Ok(None) => panic!("partition.metadata read as missing though the file exists"),
        Err(error) => {
            let _ = error.to_string();
        }
    }
}

const NOW_MS: i64 = 1_700_000_000_000;

/// How `log_recovery` splits its input into files.
struct Layout<'a> {
    clean_shutdown: bool,
    base_offset: i64,
    indexes: Option<(&'a [u8], &'a [u8])>,
    log: &'a [u8],
}

fn split(data: &[u8]) -> Option<Layout<'_>> {
    let (&flags, mut rest) = data.split_first()?;
    let mut base_offset = 0;
    if flags & 0x04 != 0 {
        let (bytes, tail) = rest.split_first_chunk::<8>()?;
        base_offset = (u64::from_be_bytes(*bytes) & i64::MAX as u64) as i64;
        rest = tail;
    }
    let mut indexes = None;
    if flags & 0x02 != 0 {
        let (lengths, tail) = rest.split_first_chunk::<4>()?;
        let index_length =
            usize::from(u16::from_be_bytes([lengths[0], lengths[1]])).min(tail.len());
        let (index, tail) = tail.split_at(index_length);
        let time_length = usize::from(u16::from_be_bytes([lengths[2], lengths[3]])).min(tail.len());
        let (time_index, tail) = tail.split_at(time_length);
        indexes = Some((index, time_index));
        rest = tail;
    }
    Some(Layout {
        clean_shutdown: flags & 0x01 != 0,
        base_offset,
        indexes,
        log: rest,
    })
}

/// Target `log_recovery`: opens a partition log whose only segment is arbitrary bytes,
/// as after a crash or a damaged disk, then reads it all and appends to it. Nothing may
/// panic; an `Err` is fine.
///
/// Input layout:
/// - byte 0: flags. Bit 0: `clean_shutdown`. Bit 1: also write `.index` and
///   `.timeindex` files. Bit 2: the segment's base offset (its file name) follows.
/// - with bit 2: a big-endian u64 whose low 63 bits are the base offset (else 0);
/// - with bit 1: a big-endian u16 `.index` length, a u16 `.timeindex` length, then that
///   many bytes of each (cut to what is there);
/// - the rest: the `.log` file, `{base offset:020}.log` (`00000000000000000000.log`
///   unless bit 2 is set).
///
/// After an unclean open (recovery), stricter checks hold: every batch read back passes
/// its header and CRC checks with base offsets increasing, and a valid batch appended as
/// leader lands at the old log end offset and reads back unchanged. After a "clean"
/// open the segment is trusted as it is, so only the absence of panics is checked.
pub fn log_recovery(data: &[u8]) {
    let Some(Layout {
        clean_shutdown,
        base_offset,
        indexes,
        log: log_bytes,
    }) = split(data)
    else {
        return;
    };
    let dir = ScratchDir::new();
    let partition = dir.path.join("topic-0");
    std::fs::create_dir(&partition).expect("create the partition directory");
    std::fs::write(
        partition.join(segment_file_name(base_offset, ".log")),
        log_bytes,
    )
    .expect("write the segment");
    if let Some((index, time_index)) = indexes {
        std::fs::write(
            partition.join(segment_file_name(base_offset, ".index")),
            index,
        )
        .expect("write the offset index");
        std::fs::write(
            partition.join(segment_file_name(base_offset, ".timeindex")),
            time_index,
        )
        .expect("write the time index");
    }

    let options = LogOpenOptions {
        clean_shutdown,
        now_ms: NOW_MS,
        ..Default::default()
    };
    let Ok(mut log) = Log::open(&partition, LogConfig::default(), options) else {
        return;
    };
    let strict = !clean_shutdown;
    let start = log.log_start_offset();
    let end = log.log_end_offset();
    assert!(start <= end, "log start {start} is past log end {end}");

    // Read everything and walk the batches.
    match log.read(start, 1 << 20, None, true) {
        Ok(fetch) => {
            let mut previous_last: Option<i64> = None;
            for batch in batches(fetch.records) {
                let batch = match batch {
                    Ok(batch) => batch,
                    Err(error) => {
                        assert!(
                            !strict,
                            "recovered log returned an unparseable batch: {error}"
                        );
                        break;
                    }
                };
                let header = batch.validate_header();
                let _ = batch.validate();
                if let Ok(records) = batch.records() {
                    records.for_each(drop);
                }
                if strict {
                    header.unwrap_or_else(|e| panic!("recovered batch fails its checks: {e}"));
                    assert!(
                        previous_last.is_none_or(|p| batch.base_offset() > p),
                        "recovered batches out of order"
                    );
                    assert!(batch.last_offset() < end, "batch past the log end offset");
                    previous_last = Some(batch.last_offset());
                }
            }
        }
        Err(error) => {
            assert!(!strict, "reading a recovered log failed: {error}");
        }
    }

    // Append a valid batch as leader and read it back.
    let records: Vec<NewRecord> = (0..3i64)
        .map(|i| NewRecord {
            timestamp: NOW_MS + i,
            key: Some(Bytes::from(format!("key-{i}"))),
            value: (i != 1).then(|| Bytes::from_static(b"value")),
            headers: vec![Header {
                key: Bytes::from_static(b"h"),
                value: None,
            }],
        })
        .collect();
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for record in &records {
        builder
            .append(record)
            .expect("records one millisecond apart with UTF-8 header keys are accepted");
    }
    let mut appended = builder.build().to_vec();
    let info = match log.append_as_leader(&mut appended, 0, NOW_MS) {
        Ok(info) => info,
        Err(error) => {
            // With no room left for three more offsets, refusing the append is right.
            assert!(
                !strict || end > i64::MAX - 3,
                "appending to a recovered log failed: {error}"
            );
            return;
        }
    };
    let fetch = log.read(info.first_offset, 1 << 20, None, true);
    if !strict {
        if let Ok(fetch) = fetch {
            for batch in batches(fetch.records).flatten() {
                let _ = batch.validate();
            }
        }
        return;
    }
    assert_eq!(
        info.first_offset, end,
        "append did not start at the log end offset"
    );
    assert_eq!(info.last_offset, end + 2);
    assert_eq!(log.log_end_offset(), end + 3);
    let fetch = fetch.unwrap_or_else(|e| panic!("reading the appended batch failed: {e}"));
    let batch: RecordBatch = batches(fetch.records)
        .next()
        .expect("the appended batch is read back")
        .expect("the appended batch parses");
    batch.validate().expect("the appended batch validates");
    assert_eq!(batch.base_offset(), end);
    assert_eq!(batch.partition_leader_epoch(), 0);
    let read: Vec<_> = batch.records().unwrap().map(Result::unwrap).collect();
    assert_eq!(read.len(), records.len());
    for (got, want) in read.iter().zip(&records) {
        assert_eq!(
            (&got.key, &got.value, &got.headers),
            (&want.key, &want.value, &want.headers)
        );
        assert_eq!(got.timestamp, want.timestamp);
    }
}

/// Target `txn_index`: byte 0 picks the reader (mod 3), the rest is its input:
///
/// - 0: a `.txnindex` file for `decode_transaction_index`. What decodes re-encodes
///   (`AbortedTxn::encode`) to the input; `check_entries` never panics, what it accepts
///   for a segment it accepts for any wider one, and accepted entries keep its rules
///   (markers increasing, each after its transaction's first offset, that one not
///   negative);
/// - 1: a marker record for `decode_marker`: byte 1 flags (bit 0 a null key, bit 1 a
///   null value), byte 2 the key's length (cut to what is there), the key, then the
///   value. What decodes re-encodes (`marker_key`, `marker_value`) to a record that
///   decodes the same;
/// - 2: a control batch for `read_marker`. What it reads, rebuilt with `control_batch`
///   (the batch's producer, the marker, its timestamp), reads back the same.
///
/// Never panics.
pub fn txn_index(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    match selector % 3 {
        0 => transaction_index_file(input),
        1 => marker_record(input),
        _ => marker_batch(input),
    }
}

fn transaction_index_file(input: &[u8]) {
    let Ok(entries) = decode_transaction_index(input) else {
        return;
    };
    let encoded: Vec<u8> = entries.iter().flat_map(AbortedTxn::encode).collect();
    assert!(
        encoded == input,
        "a transaction index does not re-encode to itself"
    );

    let widest = check_entries(&entries, i64::MIN, i64::MAX);
    // The tightest segment the markers fit: from the first to just past the last.
    if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
        let tight = check_entries(
            &entries,
            first.last_offset,
            last.last_offset.saturating_add(1),
        );
        if tight.is_ok() {
            assert!(
                widest.is_ok(),
                "accepted for a segment, refused for a wider one"
            );
        }
    }
    if widest.is_ok() {
        for (index, txn) in entries.iter().enumerate() {
            assert!(
                0 <= txn.first_offset && txn.first_offset <= txn.last_offset,
                "entry {index} accepted with first offset {} and marker {}",
                txn.first_offset,
                txn.last_offset
            );
        }
        assert!(
            entries
                .windows(2)
                .all(|pair| pair[0].last_offset < pair[1].last_offset),
            "entries accepted with markers not increasing"
        );
    }
}

fn marker_record(input: &[u8]) {
    let [flags, key_len, rest @ ..] = input else {
        return;
    };
    let (key, value) = rest.split_at(usize::from(*key_len).min(rest.len()));
    let key = (flags & 0x01 == 0).then_some(key);
    let value = (flags & 0x02 == 0).then_some(value);
    let Ok(marker) = decode_marker(key, value) else {
        return;
    };
    let key = key.expect("a marker decoded without a key");
    assert_eq!(
        i16::from_be_bytes([key[2], key[3]]),
        i16::from(marker.commit),
        "the control type is not what was decoded"
    );
    let again = decode_marker(
        Some(&marker_key(marker.commit)),
        Some(&marker_value(marker.coordinator_epoch)),
    );
    assert_eq!(
        again,
        Ok(marker),
        "a re-encoded marker does not decode the same"
    );
}

fn marker_batch(input: &[u8]) {
    let Ok(Some((marker, timestamp))) = read_marker(input) else {
        return;
    };
    let batch =
        RecordBatch::new(Bytes::copy_from_slice(input)).expect("read_marker parsed this batch");
    let rebuilt = control_batch(
        &TxnMarker {
            producer_id: batch.producer_id(),
            producer_epoch: batch.producer_epoch(),
            coordinator_epoch: marker.coordinator_epoch,
            commit: marker.commit,
        },
        timestamp,
    );
    let again = RecordBatch::new(rebuilt.clone()).expect("a control batch parses");
    again
        .validate()
        .unwrap_or_else(|e| panic!("a rebuilt control batch fails its checks: {e}"));
    assert!(again.is_control() && again.is_transactional());
    assert_eq!(
        (again.producer_id(), again.producer_epoch()),
        (batch.producer_id(), batch.producer_epoch())
    );
    let read: Option<(EndTxnMarker, i64)> = read_marker(&rebuilt)
        .unwrap_or_else(|e| panic!("a rebuilt control batch does not read: {e}"));
    assert_eq!(
        read,
        Some((marker, timestamp)),
        "a rebuilt control batch reads differently"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/txn_index")
    }

    fn txn(producer_id: i64, first_offset: i64, last_offset: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset,
            last_offset,
            last_stable_offset: lso,
        }
    }

    /// The `txn_index` seeds: byte 0 (0 index file, 1 marker record, 2 control batch),
    /// then what this crate writes: `.txnindex` entries, a marker record's key and
    /// value (plus one of newer versions, read by their version-0 prefix), and the
    /// control batches of a commit and an abort.
    fn seeds() -> Vec<(&'static str, Vec<u8>)> {
        let index: Vec<u8> = [
            txn(1000, 90, 105, 100),
            txn(1001, 100, 110, 111),
            txn(1002, 112, 120, 121),
        ]
        .iter()
        .flat_map(AbortedTxn::encode)
        .collect();
        let record = |flags: u8, key: &[u8], value: &[u8]| {
            [&[1, flags, key.len() as u8][..], key, value].concat()
        };
        let batch = |commit: bool| {
            let marker = TxnMarker {
                producer_id: 4000,
                producer_epoch: 3,
                coordinator_epoch: 7,
                commit,
            };
            [&[2u8][..], &control_batch(&marker, 1_700_000_000_000)].concat()
        };
        vec![
            ("index-empty", vec![0]),
            ("index-three-entries", [&[0u8][..], &index].concat()),
            (
                "marker-commit",
                record(0, &marker_key(true), &marker_value(7)),
            ),
            (
                "marker-abort-newer-versions",
                record(0, &[0, 1, 0, 0, 9], &[0, 1, 0, 0, 0, 5, 9]),
            ),
            ("control-batch-commit", batch(true)),
            ("control-batch-abort", batch(false)),
        ]
    }

    /// The committed seeds are what [`seeds`] writes, and inputs the readers accept (so
    /// fuzzing starts from the formats' valid shapes, not only from their refusals).
    #[test]
    fn txn_index_seeds_are_generated_and_decode() {
        let mut on_disk: Vec<String> = std::fs::read_dir(seed_dir())
            .expect("fuzz/seeds/txn_index")
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut names: Vec<String> = seeds().iter().map(|(n, _)| n.to_string()).collect();
        names.sort();
        assert_eq!(
            on_disk, names,
            "regenerate with `cargo test -p sluice-storage --lib -- --ignored write_txn_index_seeds`"
        );
        for (name, bytes) in seeds() {
            let committed = std::fs::read(seed_dir().join(name)).unwrap();
            assert!(committed == bytes, "fuzz/seeds/txn_index/{name} differs");
            txn_index(&bytes);
        }

        let seed = |name: &str| std::fs::read(seed_dir().join(name)).unwrap()[1..].to_vec();
        let entries = decode_transaction_index(&seed("index-three-entries")).unwrap();
        assert_eq!(entries.len(), 3);
        assert!(check_entries(&entries, 100, 121).is_ok());
        assert_eq!(decode_transaction_index(&seed("index-empty")), Ok(vec![]));
        let commit = seed("marker-commit");
        assert_eq!(
            decode_marker(Some(&commit[2..6]), Some(&commit[6..])),
            Ok(EndTxnMarker {
                commit: true,
                coordinator_epoch: 7
            })
        );
        let newer = seed("marker-abort-newer-versions");
        assert_eq!(
            decode_marker(Some(&newer[2..7]), Some(&newer[7..])),
            Ok(EndTxnMarker {
                commit: false,
                coordinator_epoch: 5
            })
        );
        for (name, commit) in [
            ("control-batch-commit", true),
            ("control-batch-abort", false),
        ] {
            assert_eq!(
                read_marker(&seed(name)).unwrap(),
                Some((
                    EndTxnMarker {
                        commit,
                        coordinator_epoch: 7
                    },
                    1_700_000_000_000
                ))
            );
        }
    }

    /// Writes the seeds (replacing those in `fuzz/seeds/txn_index/`).
    #[test]
    #[ignore = "writes fuzz/seeds/txn_index/; run by hand after changing the seeds"]
    fn write_txn_index_seeds() {
        let dir = seed_dir();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries {
                std::fs::remove_file(entry.unwrap().path()).unwrap();
            }
        }
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in seeds() {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }

    /// Inputs the target must survive: every seed cut short and with each byte bent.
    #[test]
    fn txn_index_survives_damaged_inputs() {
        txn_index(&[]);
        for selector in 0..3 {
            txn_index(&[selector]);
        }
        for (_, bytes) in seeds() {
            for cut in 0..bytes.len() {
                txn_index(&bytes[..cut]);
            }
            for at in 1..bytes.len() {
                let mut bent = bytes.clone();
                bent[at] ^= 0xff;
                txn_index(&bent);
            }
        }
    }
}
