//! Choosing a record's partition, as the Java client's `BuiltInPartitioner` does.
//!
//! - A keyed record goes to `toPositive(murmur2(key)) % partitions`: Kafka's murmur2
//!   (seed `0x9747b28c`) over the serialized key, masked with `0x7fffffff` (Java's
//!   `Utils.toPositive`, not `abs`). The same key lands in the same partition as with the
//!   Java client, which `tests/fixtures/murmur2_partitions.tsv` (made by
//!   `compat/client/Murmur2Table.java` against kafka-clients) checks.
//! - A record without a key (or any record with `partitioner.ignore.keys`) uses the
//!   uniform sticky partitioner (KIP-794): the topic sticks to one partition until
//!   `batch.size` bytes went to it, then moves to another chosen at random, so batches fill
//!   up and the load still evens out. That state lives in the accumulator, which knows
//!   the bytes appended.
//! - A [`Partitioner`] replaces the choice; returning `None` falls back to the above.
//!
//! A custom partitioner, the guide's region partitioner: records whose value starts with
//! a region name go to that region's partition.
//!
//! ```
//! use std::collections::HashMap;
//! use sluice_client::producer::Partitioner;
//!
//! #[derive(Debug)]
//! struct RegionPartitioner {
//!     region_mapping: HashMap<String, i32>,
//! }
//!
//! impl Partitioner for RegionPartitioner {
//!     fn partition(&self, _topic: &str, _key: Option<&[u8]>, value: Option<&[u8]>,
//!                  partition_count: i32) -> Option<i32> {
//!         let value = std::str::from_utf8(value?).ok()?;
//!         let region = value.split(':').next()?;
//!         Some(self.region_mapping.get(region).copied().unwrap_or(0) % partition_count)
//!     }
//! }
//!
//! let partitioner = RegionPartitioner {
//!     region_mapping: HashMap::from([("eu".to_string(), 1), ("us".to_string(), 2)]),
//! };
//! assert_eq!(partitioner.partition("orders", None, Some(b"us:42"), 3), Some(2));
//! assert_eq!(partitioner.partition("orders", None, Some(b"ap:42"), 3), Some(0));
//! // Installed with ProducerConfig::builder(..).partitioner(Arc::new(partitioner)).
//! ```

/// Picks a partition for a record. `None` leaves the choice to the built-in partitioner.
pub trait Partitioner: Send + Sync + std::fmt::Debug {
    fn partition(
        &self,
        topic: &str,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        partition_count: i32,
    ) -> Option<i32>;
}

/// Kafka's `Utils.murmur2`: the 32-bit MurmurHash2 with seed `0x9747b28c`.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let length = data.len();
    let mut h: u32 = SEED ^ (length as u32);
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Kafka's `Utils.toPositive`: clears the sign bit (so `i32::MIN` maps to 0, unlike abs).
pub fn to_positive(number: i32) -> i32 {
    number & 0x7fff_ffff
}

/// The partition the Java client picks for `key` among `partition_count` partitions.
pub fn partition_for_key(key: &[u8], partition_count: i32) -> i32 {
    debug_assert!(partition_count > 0);
    to_positive(murmur2(key)) % partition_count
}

/// A small xorshift generator for the sticky partitioner's random switch: the choice
/// needs to be spread, not unpredictable, and the crate has no `rand` dependency.
#[derive(Debug)]
pub(crate) struct SmallRandom(u64);

impl SmallRandom {
    pub(crate) fn new() -> SmallRandom {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos() as u64);
        SmallRandom(nanos | 1)
    }

    /// A value in `0..bound` (`bound > 0`).
    pub(crate) fn below(&mut self, bound: u32) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        ((x >> 32) % u64::from(bound)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafkas_known_values() {
        // From Kafka's UtilsTest.testMurmur2 / the Java table's first rows.
        assert_eq!(murmur2(b""), 0x106e08d9);
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(-1), i32::MAX);
    }

    #[test]
    fn random_choice_stays_in_bounds_and_spreads() {
        let mut random = SmallRandom::new();
        let mut seen = [0u32; 4];
        for _ in 0..1000 {
            seen[random.below(4) as usize] += 1;
        }
        assert!(seen.iter().all(|count| *count > 100), "{seen:?}");
    }
}
