//! `sluice dump-log`: Kafka's DumpLogSegments output for Sluice's (and Kafka's) segment,
//! index, transaction index and producer snapshot files, so an operator's scripts and habits carry over. The compat suite diffs this
//! output against Kafka's own tool on the same files.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, bail};
use bytes::Bytes;
use sluice_protocol::record_batch::batch_size_at;
use sluice_protocol::{RecordBatch, TimestampType};

pub struct Options {
    pub deep_iteration: bool,
    pub print_data: bool,
}

/// Dumps one file, chosen by its suffix.
pub fn dump(path: &Path, options: &Options, out: &mut impl Write) -> anyhow::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .context("not a file name")?;
    let (stem, suffix) = name.split_once('.').context("file has no suffix")?;
    let base_offset: i64 = stem
        .parse()
        .with_context(|| format!("{name} is not named by a base offset"))?;
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    writeln!(out, "Dumping {}", path.display())?;
    match suffix {
        "log" => dump_log(base_offset, Bytes::from(bytes), options, out),
        "index" => {
            for entry in bytes.chunks_exact(8) {
                let relative = u32::from_be_bytes(entry[0..4].try_into()?);
                let position = u32::from_be_bytes(entry[4..8].try_into()?);
                writeln!(
                    out,
                    "offset: {} position: {position}",
                    base_offset + i64::from(relative)
                )?;
            }
            Ok(())
        }
        "timeindex" => {
            for entry in bytes.chunks_exact(12) {
                let timestamp = i64::from_be_bytes(entry[0..8].try_into()?);
                let relative = u32::from_be_bytes(entry[8..12].try_into()?);
                writeln!(
                    out,
                    "timestamp: {timestamp} offset: {}",
                    base_offset + i64::from(relative)
                )?;
            }
            Ok(())
        }
        "snapshot" => {
            let entries = sluice_storage::producer_state::decode_snapshot(&bytes)
                .map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
            for entry in entries {
                let current_txn_first_offset = if entry.current_txn_first_offset >= 0 {
                    format!("OptionalLong[{}]", entry.current_txn_first_offset)
                } else {
                    "OptionalLong.empty".to_string()
                };
                write!(
                    out,
                    "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {current_txn_first_offset} lastTimestamp: {} ",
                    entry.producer_id, entry.epoch, entry.coordinator_epoch, entry.timestamp
                )?;
                if entry.last_offset >= 0 {
                    write!(
                        out,
                        "firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
                        decrement_sequence(entry.last_sequence, entry.offset_delta),
                        entry.last_sequence,
                        entry.last_offset,
                        entry.offset_delta,
                        entry.timestamp
                    )?;
                }
                writeln!(out)?;
            }
            Ok(())
        }
        "txnindex" => {
            // Kafka's `dumpTxnIndex`: every whole 34-byte `AbortedTxn` entry.
            for entry in bytes.chunks_exact(sluice_storage::transaction_index::ABORTED_TXN_BYTES) {
                let version = i16::from_be_bytes(entry[0..2].try_into()?);
                let field = |at: usize| -> anyhow::Result<i64> {
                    Ok(i64::from_be_bytes(entry[at..at + 8].try_into()?))
                };
                writeln!(
                    out,
                    "version: {version} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                    field(2)?,
                    field(10)?,
                    field(18)?,
                    field(26)?
                )?;
            }
            Ok(())
        }
        other => bail!("unsupported file type .{other}"),
    }
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: sequences wrap at i32::MAX to 0.
fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// Kafka's `DefaultRecordBatch.decrementSequence`: the inverse of [`increment_sequence`].
fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX - (decrement - sequence) + 1
    } else {
        sequence - decrement
    }
}

fn timestamp_label(timestamp_type: TimestampType) -> &'static str {
    match timestamp_type {
        TimestampType::CreateTime => "CreateTime",
        TimestampType::LogAppendTime => "LogAppendTime",
    }
}

fn dump_log(
    base_offset: i64,
    bytes: Bytes,
    options: &Options,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    writeln!(out, "Log starting offset: {base_offset}")?;
    let mut position = 0usize;
    while position < bytes.len() {
        let rest = bytes.slice(position..);
        let Some(size) = batch_size_at(&rest).filter(|size| *size <= rest.len()) else {
            writeln!(
                out,
                "Found {} invalid bytes at the end of {}",
                rest.len(),
                base_offset
            )?;
            break;
        };
        let batch = match RecordBatch::new(rest.slice(..size)) {
            Ok(batch) => batch,
            Err(error) => {
                writeln!(out, "Invalid batch at position {position}: {error}")?;
                break;
            }
        };
        let valid = batch.verify_crc().is_ok();
        let last_sequence = if batch.base_sequence() < 0 {
            -1
        } else {
            increment_sequence(batch.base_sequence(), batch.last_offset_delta())
        };
        let delete_horizon = if batch.has_delete_horizon() {
            format!("OptionalLong[{}]", batch.base_timestamp())
        } else {
            "OptionalLong.empty".to_string()
        };
        let codec = batch.compression().map(|c| c.name()).unwrap_or("unknown");
        writeln!(
            out,
            "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {last_sequence} producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} deleteHorizonMs: {delete_horizon} position: {position} {}: {} size: {size} magic: {} compresscodec: {codec} crc: {} isvalid: {valid}",
            batch.base_offset(),
            batch.last_offset(),
            batch.record_count(),
            batch.base_sequence(),
            batch.producer_id(),
            batch.producer_epoch(),
            batch.partition_leader_epoch(),
            batch.is_transactional(),
            batch.is_control(),
            timestamp_label(batch.timestamp_type()),
            batch.max_timestamp(),
            batch.magic(),
            batch.crc(),
        )?;
        if options.deep_iteration {
            dump_records(&batch, options, out)?;
        }
        position += size;
    }
    Ok(())
}

fn dump_records(
    batch: &RecordBatch,
    options: &Options,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let records = match batch.records() {
        Ok(records) => records,
        Err(error) => {
            writeln!(out, "Could not read the records: {error}")?;
            return Ok(());
        }
    };
    for record in records {
        let record = match record {
            Ok(record) => record,
            Err(error) => {
                writeln!(out, "Invalid record: {error}")?;
                return Ok(());
            }
        };
        let sequence = if batch.base_sequence() < 0 {
            -1
        } else {
            increment_sequence(batch.base_sequence(), record.offset_delta)
        };
        let header_keys: Vec<String> = record
            .headers
            .iter()
            .map(|h| String::from_utf8_lossy(&h.key).into_owned())
            .collect();
        let size = |b: &Option<Bytes>| b.as_ref().map_or(-1, |b| b.len() as i64);
        write!(
            out,
            "| offset: {} {}: {} keySize: {} valueSize: {} sequence: {sequence} headerKeys: [{}]",
            batch.base_offset() + i64::from(record.offset_delta),
            timestamp_label(batch.timestamp_type()),
            batch.record_timestamp(&record),
            size(&record.key),
            size(&record.value),
            header_keys.join(","),
        )?;
        if batch.is_control() {
            // Kafka prints a control record's meaning instead of its bytes.
            let type_id = record
                .key
                .as_ref()
                .and_then(|k| k.get(2..4))
                .map(|t| i16::from_be_bytes([t[0], t[1]]));
            match sluice_storage::end_txn_marker::decode_marker(
                record.key.as_deref(),
                record.value.as_deref(),
            ) {
                Ok(marker) => write!(
                    out,
                    " endTxnMarker: {} coordinatorEpoch: {}",
                    if marker.commit { "COMMIT" } else { "ABORT" },
                    marker.coordinator_epoch
                )?,
                Err(_) => write!(out, " controlType: UNKNOWN({})", type_id.unwrap_or(-1))?,
            }
        } else if options.print_data {
            if let Some(key) = &record.key {
                write!(out, " key: {}", String::from_utf8_lossy(key))?;
            }
            if let Some(value) = &record.value {
                write!(out, " payload: {}", String::from_utf8_lossy(value))?;
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod txn_index_tests {
    use sluice_storage::AbortedTxn;

    #[test]
    fn txn_indexes_print_as_kafkas_dump_txn_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000005.txnindex");
        let entries = [
            AbortedTxn {
                producer_id: 7,
                first_offset: 5,
                last_offset: 9,
                last_stable_offset: 10,
            },
            AbortedTxn {
                producer_id: 8,
                first_offset: 6,
                last_offset: 12,
                last_stable_offset: 11,
            },
        ];
        let bytes: Vec<u8> = entries.iter().flat_map(|e| e.encode()).collect();
        std::fs::write(&path, bytes).unwrap();
        let options = super::Options {
            deep_iteration: false,
            print_data: false,
        };
        let mut out = Vec::new();
        super::dump(&path, &options, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "Dumping {}\n\
                 version: 0 producerId: 7 firstOffset: 5 lastOffset: 9 lastStableOffset: 10\n\
                 version: 0 producerId: 8 firstOffset: 6 lastOffset: 12 lastStableOffset: 11\n",
                path.display()
            )
        );
    }
}
