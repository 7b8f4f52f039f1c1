//! The generator's pseudo-random numbers: SplitMix64, seeded per event.
//!
//! What it is: a small, fast, deterministic PRNG (Steele, Lea and Flood's SplitMix64, the
//! generator behind Java's `SplittableRandom`) plus the bounded draws the Nexmark model needs.
//! What it is not: cryptographic, or bit-compatible with `java.util.Random`, so a given seed
//! does not reproduce the Java generator's strings and prices (see the module docs of
//! `nexmark`).
//!
//! Why per event: Beam's generator seeds a fresh `Random` with each event id, which makes an
//! event a pure function of its id; that is what lets a stream be split across parallel
//! sources and resumed after a restart without replaying it. We keep that property and add
//! the user's seed, so [`EventRandom::for_stream`] derives an independent stream from
//! `(seed, domain, index)`.

/// SplitMix64's increment (the golden ratio in 64-bit fixed point).
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Domains keep the per-event streams apart from the per-channel URL streams, so event 7
/// and channel 7 of the same seed do not share random numbers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum StreamDomain {
    Event = 1,
    Channel = 2,
    HotChannel = 3,
}

/// SplitMix64's output function (a variant of MurmurHash3's finalizer): a bijection on
/// `u64` that spreads every input bit over the output.
fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A SplitMix64 generator. Every draw costs one add, two multiplies and a few shifts.
#[derive(Clone, Debug)]
pub(crate) struct EventRandom {
    state: u64,
}

impl EventRandom {
    /// The stream for `index` (an event id, a channel number) in `domain` under `seed`.
    /// Hashing the three together (rather than adding them) keeps the streams of adjacent
    /// indexes from being shifted copies of each other.
    pub(crate) fn for_stream(seed: u64, domain: StreamDomain, index: u64) -> Self {
        let domain_seed = finalize(seed ^ finalize(domain as u64));
        Self {
            state: finalize(domain_seed ^ finalize(index.wrapping_add(GOLDEN_GAMMA))),
        }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        finalize(self.state)
    }

    /// A uniform draw from `[0, bound)`, without modulo bias (Lemire's multiply-and-reject).
    /// Java's `Random.nextInt(bound)` plays this role in the reference.
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "below(0) has no value to return");
        let mut product = u128::from(self.next_u64()) * u128::from(bound);
        let mut low = product as u64;
        if low < bound {
            let threshold = bound.wrapping_neg() % bound;
            // Each draw is rejected with probability threshold / 2^64 < bound / 2^64, so the
            // loop ends after one extra draw on average even for the largest bound.
            while low < threshold {
                product = u128::from(self.next_u64()) * u128::from(bound);
                low = product as u64;
            }
        }
        (product >> 64) as u64
    }

    /// A uniform draw from `[0, 1)` with 53 bits of precision.
    pub(crate) fn unit_f64(&mut self) -> f64 {
        const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
        (self.next_u64() >> 11) as f64 * SCALE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_in_bounds_and_hits_every_value() {
        for bound in [1u64, 2, 5, 13, 26, 100, 10_000] {
            let mut random = EventRandom::for_stream(42, StreamDomain::Event, bound);
            // Up to 100 equal buckets of the range, so large bounds are checked too.
            let buckets = bound.min(100);
            let mut seen = vec![false; buckets as usize];
            for _ in 0..20_000 {
                let value = random.below(bound);
                assert!(value < bound, "{value} >= {bound}");
                seen[(value * buckets / bound) as usize] = true;
            }
            assert!(seen.iter().all(|hit| *hit), "bound {bound} missed a bucket");
        }
    }

    #[test]
    fn unit_f64_is_in_the_unit_interval_and_spread() {
        let mut random = EventRandom::for_stream(7, StreamDomain::Channel, 0);
        let draws: Vec<f64> = (0..10_000).map(|_| random.unit_f64()).collect();
        assert!(draws.iter().all(|draw| (0.0..1.0).contains(draw)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
    }

    #[test]
    fn streams_differ_by_seed_domain_and_index() {
        let first = |seed, domain, index| EventRandom::for_stream(seed, domain, index).next_u64();
        let base = first(1, StreamDomain::Event, 1);
        assert_ne!(base, first(2, StreamDomain::Event, 1));
        assert_ne!(base, first(1, StreamDomain::Channel, 1));
        assert_ne!(base, first(1, StreamDomain::Event, 2));
        assert_eq!(base, first(1, StreamDomain::Event, 1));
    }
}
