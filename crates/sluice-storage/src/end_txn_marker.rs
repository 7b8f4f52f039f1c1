//! Transaction markers (Kafka's `EndTransactionMarker` and `ControlRecordType`): the one
//! record of a control batch that ends a producer's transaction in a partition.
//!
//! A marker is a batch with the transactional (bit 4) and control (bit 5) attributes,
//! the producer's id and epoch, base sequence -1 and one record:
//!
//! ```text
//! key:   version i16 = 0, type i16 (0 ABORT, 1 COMMIT)
//! value: version i16 = 0, coordinator_epoch i32
//! ```
//!
//! The transaction coordinator decides commit or abort and asks every partition's
//! leader to append one ([`crate::Log::append_control_marker`]); consumers reading
//! committed records skip the aborted ones with the help of the transaction index
//! ([`crate::transaction_index`]). This module only encodes and decodes; the producer
//! state ([`crate::producer_state`]) decides what a marker does.

use bytes::Bytes;
use sluice_protocol::record_batch::BatchError;
use sluice_protocol::{Compression, NewRecord, RecordBatch, RecordBatchBuilder};

/// Kafka's `ControlRecordType.CURRENT_CONTROL_RECORD_KEY_VERSION`.
pub const CONTROL_KEY_VERSION: i16 = 0;
/// Kafka's `EndTransactionMarker` value version.
pub const END_TXN_MARKER_VERSION: i16 = 0;
/// Kafka's `ControlRecordType.ABORT`.
pub const CONTROL_TYPE_ABORT: i16 = 0;
/// Kafka's `ControlRecordType.COMMIT`.
pub const CONTROL_TYPE_COMMIT: i16 = 1;

/// What the broker asks a partition to write to end a transaction (one entry of a
/// WriteTxnMarkers request for this partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub commit: bool,
}

/// What a marker record says; the producer id and epoch are in its batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// The marker record's key.
pub fn marker_key(commit: bool) -> [u8; 4] {
    let control_type = if commit {
        CONTROL_TYPE_COMMIT
    } else {
        CONTROL_TYPE_ABORT
    };
    let mut key = [0u8; 4];
    key[..2].copy_from_slice(&CONTROL_KEY_VERSION.to_be_bytes());
    key[2..].copy_from_slice(&control_type.to_be_bytes());
    key
}

/// The marker record's value.
pub fn marker_value(coordinator_epoch: i32) -> [u8; 6] {
    let mut value = [0u8; 6];
    value[..2].copy_from_slice(&END_TXN_MARKER_VERSION.to_be_bytes());
    value[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
    value
}

/// The control batch of `marker`, as Kafka's `MemoryRecords.withEndTransactionMarker`
/// writes it: uncompressed, CreateTime `timestamp_ms`, base offset 0 (the leader
/// assigns it), base sequence -1.
pub fn control_batch(marker: &TxnMarker, timestamp_ms: i64) -> Bytes {
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .producer(marker.producer_id, marker.producer_epoch, -1)
        .transactional(true)
        .control(true);
    builder
        .append(&NewRecord {
            timestamp: timestamp_ms,
            key: Some(Bytes::copy_from_slice(&marker_key(marker.commit))),
            value: Some(Bytes::copy_from_slice(&marker_value(
                marker.coordinator_epoch,
            ))),
            headers: Vec::new(),
        })
        .expect("a marker record always fits a batch");
    builder.build()
}

/// Decodes a marker record's key and value. Kafka reads newer versions by their
/// version-0 prefix, and so does this.
pub fn decode_marker(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<EndTxnMarker, String> {
    let key = key.ok_or("a control record without a key")?;
    let (Some(version), Some(control_type)) = (i16_at(key, 0), i16_at(key, 2)) else {
        return Err(format!("a control record key of {} bytes", key.len()));
    };
    if version < 0 {
        return Err(format!("control record key version {version}"));
    }
    let commit = match control_type {
        CONTROL_TYPE_ABORT => false,
        CONTROL_TYPE_COMMIT => true,
        other => {
            return Err(format!(
                "control record type {other} is not a transaction marker"
            ));
        }
    };
    let value = value.ok_or("a transaction marker without a value")?;
    let version = i16_at(value, 0).ok_or("a transaction marker value of under 2 bytes")?;
    if version < 0 {
        return Err(format!("transaction marker version {version}"));
    }
    let coordinator_epoch = value
        .get(2..6)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(i32::from_be_bytes)
        .ok_or("a transaction marker value without a coordinator epoch")?;
    Ok(EndTxnMarker {
        commit,
        coordinator_epoch,
    })
}

fn i16_at(bytes: &[u8], at: usize) -> Option<i16> {
    bytes
        .get(at..at + 2)
        .map(|b| i16::from_be_bytes([b[0], b[1]]))
}

/// The marker of a control batch (`batch` is the whole batch) and its record's
/// timestamp; `None` for a control batch without records (a cleaned transaction, which
/// Kafka skips too).
pub fn read_marker(batch: &[u8]) -> Result<Option<(EndTxnMarker, i64)>, BatchError> {
    let batch = RecordBatch::new(Bytes::copy_from_slice(batch))?;
    let Some(record) = batch.records()?.next() else {
        return Ok(None);
    };
    let record = record?;
    let marker = decode_marker(record.key.as_deref(), record.value.as_deref())
        .map_err(|reason| BatchError::InvalidRecord { index: 0, reason })?;
    Ok(Some((marker, batch.record_timestamp(&record))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batch Kafka's `MemoryRecords.withEndTransactionMarker` builds: attributes
    /// 0x30, the producer in the header, the key and value bytes of its schema.
    #[test]
    fn control_batches_are_kafkas() {
        for commit in [false, true] {
            let marker = TxnMarker {
                producer_id: 42,
                producer_epoch: 3,
                coordinator_epoch: 7,
                commit,
            };
            let bytes = control_batch(&marker, 1_234);
            let batch = RecordBatch::new(bytes.clone()).unwrap();
            batch.validate().unwrap();
            assert_eq!(batch.attributes(), 0x30);
            assert!(batch.is_control() && batch.is_transactional());
            assert_eq!(
                (
                    batch.producer_id(),
                    batch.producer_epoch(),
                    batch.base_sequence()
                ),
                (42, 3, -1)
            );
            let record = batch.records().unwrap().next().unwrap().unwrap();
            assert_eq!(
                record.key.as_deref(),
                Some(&[0, 0, 0, u8::from(commit)][..])
            );
            assert_eq!(record.value.as_deref(), Some(&[0, 0, 0, 0, 0, 7][..]));
            assert_eq!(
                read_marker(&bytes).unwrap(),
                Some((
                    EndTxnMarker {
                        commit,
                        coordinator_epoch: 7
                    },
                    1_234
                ))
            );
        }
    }

    #[test]
    fn malformed_markers_are_errors() {
        type KeyAndValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);
        let cases: &[KeyAndValue] = &[
            (None, Some(&[0, 0, 0, 0, 0, 1])),
            (Some(&[0, 0, 0]), Some(&[0, 0, 0, 0, 0, 1])),
            (Some(&[0xff, 0xff, 0, 1]), Some(&[0, 0, 0, 0, 0, 1])),
            (Some(&[0, 0, 0, 2]), Some(&[0, 0, 0, 0, 0, 1])), // LEADER_CHANGE
            (Some(&[0, 0, 0, 1]), None),
            (Some(&[0, 0, 0, 1]), Some(&[0, 0, 0, 0])),
        ];
        for (key, value) in cases {
            assert!(decode_marker(*key, *value).is_err(), "{key:?} {value:?}");
        }
        // Newer versions are read by their version-0 prefix.
        assert_eq!(
            decode_marker(Some(&[0, 1, 0, 1, 9]), Some(&[0, 1, 0, 0, 0, 5, 9])),
            Ok(EndTxnMarker {
                commit: true,
                coordinator_epoch: 5
            })
        );
        assert!(read_marker(&[0; 10]).is_err());
    }
}
