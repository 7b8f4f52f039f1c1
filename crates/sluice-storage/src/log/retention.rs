//! What leaves a log from its start: time and size retention (Kafka's
//! `deleteOldSegments`), bounded by the high watermark, and DeleteRecords, which moves
//! the log start offset and deletes the segments wholly below it.

use crate::checkpoint;
use crate::error::{Result, StorageError};

use super::Log;

impl Log {
    /// Retention (Kafka's `deleteOldSegments`) with no high-watermark bound; see
    /// [`Log::delete_old_segments_below`].
    pub fn delete_old_segments(&mut self, now_ms: i64) -> Result<usize> {
        self.delete_old_segments_below(now_ms, i64::MAX)
    }

    /// Retention (Kafka's `deleteOldSegments`): deletes whole segments that are past
    /// `retention.ms`, beyond `retention.bytes`, or wholly below the log start offset,
    /// oldest first, each only when the high watermark has reached its end (so no
    /// unreplicated data goes); then advances the log start offset to the first remaining
    /// segment. The active segment goes too when it is not empty and expired or over the
    /// size limit: the log rolls first, so it keeps an (empty) active segment at the log
    /// end, and the log start offset becomes the log end offset, as in Kafka. Returns how
    /// many segments were deleted.
    pub fn delete_old_segments_below(&mut self, now_ms: i64, high_watermark: i64) -> Result<usize> {
        // A `compact`-only topic (the coordinators' internal topics) is not subject to
        // time or size retention, as in Kafka: its old segments go only below the log
        // start offset.
        let retention_ms = if self.config.cleanup_delete {
            self.config.retention_ms
        } else {
            -1
        };
        let mut excess_bytes = if self.config.cleanup_delete && self.config.retention_bytes >= 0 {
            self.size_bytes() as i64 - self.config.retention_bytes
        } else {
            i64::MIN
        };
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        let log_end_offset = self.log_end_offset();
        let mut deleted = 0;
        for (i, base) in bases.iter().copied().enumerate() {
            let next_base = bases.get(i + 1).copied();
            let segment = &self.segments[&base];
            if next_base.is_none() && segment.size_bytes() == 0 {
                break;
            }
            if high_watermark < next_base.unwrap_or(log_end_offset) {
                break;
            }
            let below_start = next_base.is_some_and(|next| next <= self.log_start_offset);
            let expired = retention_ms >= 0
                && now_ms.saturating_sub(segment.largest_timestamp()) > retention_ms;
            let over_size =
                excess_bytes != i64::MIN && excess_bytes - segment.size_bytes() as i64 >= 0;
            if !(below_start || expired || over_size) {
                break;
            }
            if excess_bytes != i64::MIN {
                excess_bytes -= segment.size_bytes() as i64;
            }
            if next_base.is_none() {
                // The active segment: a new empty one takes its place first.
                self.roll(log_end_offset, now_ms)?;
            }
            let segment = self.segments.remove(&base).expect("listed above");
            tracing::info!(dir = %self.dir.display(), base_offset = base, below_start, expired, over_size, "deleting segment");
            segment.delete()?;
            deleted += 1;
        }
        if deleted > 0 {
            let first = *self
                .segments
                .keys()
                .next()
                .expect("the active segment remains");
            self.advance_log_start_offset(first)?;
            let start = self.log_start_offset;
            self.delete_snapshots_where(|offset| offset < start)?;
            checkpoint::sync_dir(&self.dir)?;
        }
        Ok(deleted)
    }

    /// DeleteRecords: moves the log start offset to `offset` (which may not pass the log
    /// end) and deletes the segments wholly below it. Returns the new log start offset.
    pub fn delete_records(&mut self, offset: i64) -> Result<i64> {
        let log_end_offset = self.log_end_offset();
        if offset > log_end_offset || offset < 0 {
            return Err(StorageError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset,
            });
        }
        if offset > self.log_start_offset {
            self.advance_log_start_offset(offset)?;
            self.delete_below_log_start()?;
        }
        Ok(self.log_start_offset)
    }

    fn delete_below_log_start(&mut self) -> Result<()> {
        let doomed: Vec<i64> = self
            .segments
            .keys()
            .zip(self.segments.keys().skip(1))
            .filter(|(_, next)| **next <= self.log_start_offset)
            .map(|(base, _)| *base)
            .collect();
        for base in doomed {
            if let Some(segment) = self.segments.remove(&base) {
                segment.delete()?;
            }
        }
        let start = self.log_start_offset;
        self.delete_snapshots_where(|offset| offset < start)?;
        checkpoint::sync_dir(&self.dir)
    }

    fn advance_log_start_offset(&mut self, offset: i64) -> Result<()> {
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
            self.leader_epochs.truncate_from_start(offset)?;
        }
        Ok(())
    }
}
