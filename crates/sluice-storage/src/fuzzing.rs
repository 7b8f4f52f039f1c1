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
