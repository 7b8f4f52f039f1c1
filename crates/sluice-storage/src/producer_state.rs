//! Idempotent producers' state per partition (Kafka's `ProducerStateManager`): for each
//! producer id, its epoch and the sequence ranges and offsets of its last five batches
//! (`max.in.flight.requests.per.connection` at most 5), so that a retried batch gets its
//! original offsets back instead of being appended twice, and a gap in the sequence is
//! refused.
//!
//! The leader checks and updates it on append; followers update it from the batches
//! they replicate, so a new leader deduplicates retries sent before the failover. It is
//! rebuilt from the active segment when a log opens (producer snapshot files, which let
//! Kafka rebuild it from older segments cheaply, come with transactions).

use std::collections::{HashMap, VecDeque};

/// Kafka keeps the metadata of this many batches per producer.
pub const BATCHES_PER_PRODUCER: usize = 5;

/// One appended batch of a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub first_offset: i64,
    pub last_offset: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMetadata>,
}

/// What the state says about a producer batch about to be appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// Append it.
    Append,
    /// Already appended, at these offsets: answer with them, append nothing.
    Duplicate(BatchMetadata),
}

/// Why a producer batch is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    /// Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER.
    #[error(
        "out of order sequence number for producer {producer_id} at epoch {epoch}: {found} (incoming batch), {expected} expected"
    )]
    OutOfOrder {
        producer_id: i64,
        epoch: i16,
        found: i32,
        expected: i32,
    },
    /// Kafka: INVALID_PRODUCER_EPOCH.
    #[error("producer {producer_id}'s epoch {epoch} is older than its current epoch {current}")]
    StaleEpoch {
        producer_id: i64,
        epoch: i16,
        current: i16,
    },
}

/// The sequence after `sequence` (sequences wrap from `i32::MAX` to 0).
pub fn next_sequence(sequence: i32) -> i32 {
    if sequence == i32::MAX {
        0
    } else {
        sequence + 1
    }
}

/// The last sequence of a batch that starts at `first` and holds `last_offset_delta + 1`
/// records.
pub fn last_sequence(first: i32, last_offset_delta: i32) -> i32 {
    ((i64::from(first) + i64::from(last_offset_delta)) % (i64::from(i32::MAX) + 1)) as i32
}

#[derive(Debug, Default, Clone)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerEntry>,
}

impl ProducerStateManager {
    /// Checks a batch of an idempotent producer (`producer_id` ≥ 0, `first_sequence` ≥
    /// 0; anything else is always appended). A producer with no state (new, or whose
    /// batches left the log) is accepted at any sequence, as Kafka 4.1 accepts it
    /// (KIP-360).
    pub fn check(
        &self,
        producer_id: i64,
        epoch: i16,
        first_sequence: i32,
        last_sequence: i32,
    ) -> Result<SequenceCheck, SequenceError> {
        if producer_id < 0 || first_sequence < 0 {
            return Ok(SequenceCheck::Append);
        }
        let Some(entry) = self.producers.get(&producer_id) else {
            return Ok(SequenceCheck::Append);
        };
        if epoch < entry.epoch {
            return Err(SequenceError::StaleEpoch {
                producer_id,
                epoch,
                current: entry.epoch,
            });
        }
        if epoch > entry.epoch {
            // A bumped epoch starts its sequence again.
            return if first_sequence == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(SequenceError::OutOfOrder {
                    producer_id,
                    epoch,
                    found: first_sequence,
                    expected: 0,
                })
            };
        }
        if let Some(batch) = entry
            .batches
            .iter()
            .find(|b| b.first_sequence == first_sequence && b.last_sequence == last_sequence)
        {
            return Ok(SequenceCheck::Duplicate(*batch));
        }
        match entry.batches.back() {
            Some(last) if first_sequence != next_sequence(last.last_sequence) => {
                Err(SequenceError::OutOfOrder {
                    producer_id,
                    epoch,
                    found: first_sequence,
                    expected: next_sequence(last.last_sequence),
                })
            }
            _ => Ok(SequenceCheck::Append),
        }
    }

    /// Records an appended batch (leader or follower).
    pub fn update(&mut self, producer_id: i64, epoch: i16, batch: BatchMetadata) {
        if producer_id < 0 || batch.first_sequence < 0 {
            return;
        }
        let entry = self.producers.entry(producer_id).or_default();
        if epoch != entry.epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.batches.push_back(batch);
        while entry.batches.len() > BATCHES_PER_PRODUCER {
            entry.batches.pop_front();
        }
    }

    /// Forgets batches at or after `end_offset` (the log was truncated there). A
    /// producer left with none is forgotten (and accepted afresh).
    pub fn truncate(&mut self, end_offset: i64) {
        self.producers.retain(|_, entry| {
            entry.batches.retain(|b| b.last_offset < end_offset);
            !entry.batches.is_empty()
        });
    }

    pub fn clear(&mut self) {
        self.producers.clear();
    }

    /// How many producers have state.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(first_sequence: i32, count: i32, first_offset: i64) -> BatchMetadata {
        BatchMetadata {
            first_sequence,
            last_sequence: last_sequence(first_sequence, count - 1),
            first_offset,
            last_offset: first_offset + i64::from(count) - 1,
        }
    }

    #[test]
    fn retries_are_duplicates_and_gaps_are_refused() {
        let mut state = ProducerStateManager::default();
        assert_eq!(
            state.check(7, 0, 5, 9),
            Ok(SequenceCheck::Append),
            "unknown producer"
        );
        state.update(7, 0, batch(0, 5, 100));
        state.update(7, 0, batch(5, 5, 110));
        assert_eq!(
            state.check(7, 0, 0, 4),
            Ok(SequenceCheck::Duplicate(batch(0, 5, 100)))
        );
        assert_eq!(state.check(7, 0, 10, 12), Ok(SequenceCheck::Append));
        assert!(matches!(
            state.check(7, 0, 11, 12),
            Err(SequenceError::OutOfOrder { expected: 10, .. })
        ));
        state.update(7, 2, batch(0, 1, 120));
        assert!(matches!(
            state.check(7, 1, 1, 1),
            Err(SequenceError::StaleEpoch { current: 2, .. })
        ));
        assert!(matches!(
            state.check(7, 3, 4, 4),
            Err(SequenceError::OutOfOrder { expected: 0, .. })
        ));
        assert_eq!(state.check(7, 3, 0, 0), Ok(SequenceCheck::Append));
        // Only the last five batches are remembered.
        for i in 1..=6 {
            state.update(7, 2, batch(i, 1, 120 + i64::from(i)));
        }
        assert_eq!(
            state.check(7, 2, 1, 1),
            Err(SequenceError::OutOfOrder {
                producer_id: 7,
                epoch: 2,
                found: 1,
                expected: 7
            })
        );
        assert!(matches!(
            state.check(7, 2, 6, 6),
            Ok(SequenceCheck::Duplicate(_))
        ));
        // Truncation forgets what was cut, and a producer with nothing left.
        state.truncate(125);
        assert_eq!(state.check(7, 2, 5, 5), Ok(SequenceCheck::Append));
        state.truncate(0);
        assert!(state.is_empty());
    }

    #[test]
    fn sequences_wrap() {
        assert_eq!(next_sequence(i32::MAX), 0);
        assert_eq!(last_sequence(i32::MAX - 1, 3), 1);
        let mut state = ProducerStateManager::default();
        state.update(1, 0, batch(i32::MAX - 1, 2, 0));
        assert_eq!(state.check(1, 0, 0, 0), Ok(SequenceCheck::Append));
    }
}
