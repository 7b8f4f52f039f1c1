//! The time index (`.timeindex`): sparse entries mapping a timestamp to the offset where
//! the segment's max timestamp first reached it, so ListOffsets by timestamp starts its
//! scan near the answer. Kafka's `TimeIndex`; the storage and search are shared with the
//! offset index in [`crate::index`].

use crate::index::{Index, IndexEntry};

/// A time-index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeEntry {
    pub timestamp: i64,
    pub relative_offset: u32,
}

impl IndexEntry for TimeEntry {
    const SIZE: usize = 12;
    fn decode(bytes: &[u8]) -> Self {
        TimeEntry {
            timestamp: i64::from_be_bytes(bytes[0..8].try_into().expect("8 bytes")),
            relative_offset: u32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes")),
        }
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
    }
    fn relative_offset(&self) -> u32 {
        self.relative_offset
    }
}

/// Checks a time index: timestamps and offsets never decreasing, offsets inside the
/// segment's range.
pub(crate) fn check_time_entries(
    entries: &[TimeEntry],
    max_relative_offset: Option<u32>,
) -> std::result::Result<(), String> {
    for pair in entries.windows(2) {
        if pair[1].timestamp < pair[0].timestamp
            || pair[1].relative_offset < pair[0].relative_offset
        {
            return Err(format!(
                "entries out of order: {:?} then {:?}",
                pair[0], pair[1]
            ));
        }
    }
    if let Some(last) = entries.last()
        && max_relative_offset.is_some_and(|max| last.relative_offset > max)
    {
        return Err(format!("entry {last:?} is past the segment's offsets"));
    }
    Ok(())
}

impl Index<TimeEntry> {
    /// Appends (timestamp, offset) when the timestamp is larger than the last entry's,
    /// as Kafka's `maybeAppend`. Returns whether it appended.
    pub(crate) fn push_if_newer(&mut self, timestamp: i64, relative_offset: i64) -> bool {
        // An entry claiming a later offset for an earlier timestamp is stale (see
        // `Index::push`); only a larger timestamp at a later offset is appended.
        if timestamp < 0
            || self.last().is_some_and(|last| {
                timestamp <= last.timestamp || i64::from(last.relative_offset) > relative_offset
            })
        {
            return false;
        }
        self.push(TimeEntry {
            timestamp,
            relative_offset: relative_offset as u32,
        });
        true
    }
}
