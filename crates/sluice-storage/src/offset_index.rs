//! The offset index (`.index`): sparse entries mapping an offset to the file position of
//! the batch that ends at it, so a read finds its batch with a binary search and a short
//! scan. Kafka's `OffsetIndex`; the storage and search are shared with the time index
//! in [`crate::index`].

use crate::index::IndexEntry;

/// An offset-index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetEntry {
    pub relative_offset: u32,
    pub position: u32,
}

impl IndexEntry for OffsetEntry {
    const SIZE: usize = 8;
    fn decode(bytes: &[u8]) -> Self {
        OffsetEntry {
            relative_offset: u32::from_be_bytes(bytes[0..4].try_into().expect("4 bytes")),
            position: u32::from_be_bytes(bytes[4..8].try_into().expect("4 bytes")),
        }
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
        out.extend_from_slice(&self.position.to_be_bytes());
    }
    fn relative_offset(&self) -> u32 {
        self.relative_offset
    }
}

/// Checks an offset index against its segment: offsets and positions strictly increasing,
/// positions inside the log, offsets inside the segment's offset range.
pub(crate) fn check_offset_entries(
    entries: &[OffsetEntry],
    log_size_bytes: u64,
    max_relative_offset: Option<u32>,
) -> std::result::Result<(), String> {
    for pair in entries.windows(2) {
        if pair[1].relative_offset <= pair[0].relative_offset
            || pair[1].position <= pair[0].position
        {
            return Err(format!(
                "entries out of order: {:?} then {:?}",
                pair[0], pair[1]
            ));
        }
    }
    if let Some(last) = entries.last() {
        if u64::from(last.position) >= log_size_bytes {
            return Err(format!(
                "entry {last:?} points past the log's {log_size_bytes} bytes"
            ));
        }
        if max_relative_offset.is_some_and(|max| last.relative_offset > max) {
            return Err(format!("entry {last:?} is past the segment's offsets"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_index::{TimeEntry, check_time_entries};

    #[test]
    fn checks_reject_disorder_and_overreach() {
        let ordered = [
            OffsetEntry {
                relative_offset: 1,
                position: 0,
            },
            OffsetEntry {
                relative_offset: 5,
                position: 100,
            },
        ];
        assert!(check_offset_entries(&ordered, 200, Some(10)).is_ok());
        assert!(check_offset_entries(&ordered, 100, Some(10)).is_err());
        assert!(check_offset_entries(&ordered, 200, Some(4)).is_err());
        let swapped = [ordered[1], ordered[0]];
        assert!(check_offset_entries(&swapped, 200, None).is_err());
        let times = [
            TimeEntry {
                timestamp: 10,
                relative_offset: 1,
            },
            TimeEntry {
                timestamp: 5,
                relative_offset: 2,
            },
        ];
        assert!(check_time_entries(&times, None).is_err());
    }
}
