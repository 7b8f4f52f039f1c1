//! Key groups: the unit in which keyed state is stored, snapshotted and rescaled.
//!
//! Follows Flink's `KeyGroupRangeAssignment`: a job has a `max_parallelism` (default 128)
//! fixed for its lifetime; every key belongs to one key group in `0..max_parallelism`, and
//! a parallel instance `i` of `p` owns the contiguous range of groups `g` with
//! `g * p / max_parallelism == i`. Rescaling moves whole key groups, never single keys.
//!
//! The exact function (it must never change once state has been written with it):
//!
//! ```text
//! bytes      = what the key's `std::hash::Hash` impl writes, with every integer written
//!              little-endian and `usize`/`isize` widened to 8 bytes (so 32- and 64-bit
//!              machines agree; a `str` writes its UTF-8 bytes then 0xff)
//! code       = FNV-1a 32-bit over bytes (offset basis 0x811c9dc5, prime 0x01000193),
//!              read as i32 (the analogue of Java's `hashCode()`)
//! mixed      = Flink's MathUtils.murmurHash(code): one murmur3 x86_32 round of `code`
//!              with seed 0 and length 4, then fmix32, made non-negative
//!              (x < 0 ? (x == i32::MIN ? 0 : -x) : x)
//! key_group  = mixed % max_parallelism
//! ```
//!
//! Flink hashes Java's `hashCode()`; Rust has no stable equivalent, hence the FNV step.
//! Key groups are therefore not compatible with Flink's for the same keys, only the
//! structure is.

use std::hash::{Hash, Hasher};

/// Flink's default `max_parallelism` for small jobs.
pub const DEFAULT_MAX_PARALLELISM: u32 = 128;
/// Flink's upper bound on `max_parallelism` (2^15).
pub const UPPER_BOUND_MAX_PARALLELISM: u32 = 1 << 15;

/// The key group of `key`.
pub fn assign_to_key_group<K: Hash + ?Sized>(key: &K, max_parallelism: u32) -> u32 {
    debug_assert!((1..=UPPER_BOUND_MAX_PARALLELISM).contains(&max_parallelism));
    let mut hasher = KeyHasher::default();
    key.hash(&mut hasher);
    let code = hasher.finish_u32() as i32;
    murmur_hash(code) % max_parallelism
}

/// The parallel instance that owns `key_group` (Flink's
/// `computeOperatorIndexForKeyGroup`).
pub fn operator_index_for_key_group(key_group: u32, parallelism: u32, max_parallelism: u32) -> u32 {
    debug_assert!(parallelism >= 1 && parallelism <= max_parallelism);
    ((u64::from(key_group) * u64::from(parallelism)) / u64::from(max_parallelism)) as u32
}

/// The key groups parallel instance `operator_index` of `parallelism` owns (Flink's
/// `computeKeyGroupRangeForOperatorIndex`): `[ceil(i * maxP / p), ceil((i + 1) * maxP / p))`,
/// exactly the groups `operator_index_for_key_group` sends to `i`. (The floor form
/// `[i * maxP / p, (i + 1) * maxP / p)` agrees only when `p` divides `maxP`.) A restore
/// with another parallelism hands each instance the snapshot's groups in its range.
pub fn key_group_range_for_operator(
    max_parallelism: u32,
    parallelism: u32,
    operator_index: u32,
) -> std::ops::Range<u32> {
    assert!(
        parallelism >= 1 && parallelism <= max_parallelism && operator_index < parallelism,
        "parallelism {parallelism}, index {operator_index}, max parallelism {max_parallelism}"
    );
    let (max, p, i) = (
        u64::from(max_parallelism),
        u64::from(parallelism),
        u64::from(operator_index),
    );
    let start = (i * max).div_ceil(p);
    let end = ((i + 1) * max).div_ceil(p);
    // Both ≤ max_parallelism ≤ 2^15.
    (start as u32)..(end as u32)
}

/// Flink's `MathUtils.murmurHash(int)`, returning the non-negative result as u32.
pub fn murmur_hash(code: i32) -> u32 {
    let mut h = (code as u32).wrapping_mul(0xcc9e_2d51);
    h = h.rotate_left(15);
    h = h.wrapping_mul(0x1b87_3593);
    h = h.rotate_left(13);
    h = h.wrapping_mul(5).wrapping_add(0xe654_6b64);
    h ^= 4;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    let signed = h as i32;
    if signed >= 0 {
        signed as u32
    } else if signed != i32::MIN {
        (-signed) as u32
    } else {
        0
    }
}

/// FNV-1a 32-bit over the bytes a `Hash` impl writes, integers little-endian.
struct KeyHasher {
    state: u32,
}

impl Default for KeyHasher {
    fn default() -> Self {
        Self { state: 0x811c_9dc5 }
    }
}

impl KeyHasher {
    fn finish_u32(&self) -> u32 {
        self.state
    }
}

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        u64::from(self.state)
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.state ^= u32::from(*byte);
            self.state = self.state.wrapping_mul(0x0100_0193);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }
    fn write_u16(&mut self, i: u16) {
        self.write(&i.to_le_bytes());
    }
    fn write_u32(&mut self, i: u32) {
        self.write(&i.to_le_bytes());
    }
    fn write_u64(&mut self, i: u64) {
        self.write(&i.to_le_bytes());
    }
    fn write_u128(&mut self, i: u128) {
        self.write(&i.to_le_bytes());
    }
    fn write_usize(&mut self, i: usize) {
        self.write(&(i as u64).to_le_bytes());
    }
    fn write_i8(&mut self, i: i8) {
        self.write_u8(i as u8);
    }
    fn write_i16(&mut self, i: i16) {
        self.write_u16(i as u16);
    }
    fn write_i32(&mut self, i: i32) {
        self.write_u32(i as u32);
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn write_i128(&mut self, i: i128) {
        self.write_u128(i as u128);
    }
    fn write_isize(&mut self, i: isize) {
        self.write_u64(i as i64 as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_groups_are_pinned() {
        // These values are the on-disk contract of keyed state: changing the function
        // breaks restoring every existing snapshot. They were checked against an
        // independent implementation of the function in the module docs (Python).
        let cases: Vec<(&str, u32)> = vec![
            ("", PIN_EMPTY),
            ("EU", PIN_EU),
            ("US", PIN_US),
            ("customer-42", PIN_CUSTOMER),
        ];
        for (key, expected) in cases {
            assert_eq!(
                assign_to_key_group(key, DEFAULT_MAX_PARALLELISM),
                expected,
                "key {key:?}"
            );
        }
        assert_eq!(
            assign_to_key_group(&7_i64, DEFAULT_MAX_PARALLELISM),
            PIN_SEVEN
        );
        // `String` and `&str` hash alike, so lookups by either agree.
        assert_eq!(
            assign_to_key_group(&"EU".to_string(), 128),
            assign_to_key_group("EU", 128)
        );
    }

    const PIN_EMPTY: u32 = 17;
    const PIN_EU: u32 = 94;
    const PIN_US: u32 = 91;
    const PIN_CUSTOMER: u32 = 62;
    const PIN_SEVEN: u32 = 22;

    #[test]
    fn murmur_is_non_negative_and_groups_in_range() {
        for code in [0, 1, -1, i32::MIN, i32::MAX, 123_456_789] {
            assert!(murmur_hash(code) <= i32::MAX as u32);
        }
        for key in 0..10_000_u64 {
            for max_parallelism in [1, 7, 128, UPPER_BOUND_MAX_PARALLELISM] {
                assert!(assign_to_key_group(&key, max_parallelism) < max_parallelism);
            }
        }
    }

    #[test]
    fn operator_index_ranges_are_contiguous() {
        let (parallelism, max_parallelism) = (3, 128);
        let owners: Vec<u32> = (0..max_parallelism)
            .map(|group| operator_index_for_key_group(group, parallelism, max_parallelism))
            .collect();
        assert!(owners.windows(2).all(|pair| pair[0] <= pair[1]));
        assert_eq!(owners.first(), Some(&0));
        assert_eq!(owners.last(), Some(&2));
    }

    #[test]
    // One instance owning one range is the case meant, not a typo for `vec![0; 128]`.
    #[allow(clippy::single_range_in_vec_init)]
    fn key_group_ranges_match_flink() {
        // (max parallelism, parallelism, expected ranges); the uneven cases are where the
        // ceiling matters (Flink: 0-42, 43-85, 86-127 for 128 over 3).
        let cases: &[(u32, u32, &[std::ops::Range<u32>])] = &[
            (128, 1, &[0..128]),
            (128, 2, &[0..64, 64..128]),
            (128, 3, &[0..43, 43..86, 86..128]),
            (10, 4, &[0..3, 3..5, 5..8, 8..10]),
            (4, 4, &[0..1, 1..2, 2..3, 3..4]),
        ];
        for (max_parallelism, parallelism, expected) in cases {
            let ranges: Vec<_> = (0..*parallelism)
                .map(|index| key_group_range_for_operator(*max_parallelism, *parallelism, index))
                .collect();
            assert_eq!(&ranges, expected, "{max_parallelism} over {parallelism}");
        }
    }

    proptest::proptest! {
        #[test]
        fn ranges_partition_the_key_groups_as_routing_does(
            max_parallelism in 1_u32..=4096,
            parallelism_seed in 0_u32..4096,
        ) {
            let parallelism = parallelism_seed % max_parallelism + 1;
            let mut next = 0;
            for index in 0..parallelism {
                let range = key_group_range_for_operator(max_parallelism, parallelism, index);
                proptest::prop_assert_eq!(range.start, next);
                for group in range.clone() {
                    proptest::prop_assert_eq!(
                        operator_index_for_key_group(group, parallelism, max_parallelism),
                        index
                    );
                }
                next = range.end;
            }
            proptest::prop_assert_eq!(next, max_parallelism);
        }
    }
}
