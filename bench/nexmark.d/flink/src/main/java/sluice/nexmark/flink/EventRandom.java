package sluice.nexmark.flink;

/**
 * SplitMix64 seeded per (seed, domain, index), with Lemire's bounded draw: a bit-for-bit
 * port of `sluice_stream::nexmark::random::EventRandom`. Java longs stand for Rust's u64
 * (two's-complement arithmetic wraps the same way; shifts are unsigned, comparisons and
 * remainders go through the unsigned helpers).
 */
final class EventRandom {
    /** SplitMix64's increment (the golden ratio in 64-bit fixed point). */
    static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;

    /** Rust's `StreamDomain`. */
    static final long DOMAIN_EVENT = 1;
    static final long DOMAIN_CHANNEL = 2;
    static final long DOMAIN_HOT_CHANNEL = 3;

    private static final double UNIT_SCALE = 0x1.0p-53;

    private long state;

    private EventRandom(long state) {
        this.state = state;
    }

    /** SplitMix64's output function. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The stream for `index` in `domain` under `seed` (Rust: `EventRandom::for_stream`). */
    static EventRandom forStream(long seed, long domain, long index) {
        long domainSeed = mix(seed ^ mix(domain));
        return new EventRandom(mix(domainSeed ^ mix(index + GOLDEN_GAMMA)));
    }

    long nextLong() {
        state += GOLDEN_GAMMA;
        return mix(state);
    }

    /**
     * A uniform draw from [0, bound) for 0 < bound < 2^63 (Rust: `below`, Lemire's
     * multiply-and-reject on the 128-bit product).
     */
    long below(long bound) {
        long x = nextLong();
        long low = x * bound;
        if (Long.compareUnsigned(low, bound) < 0) {
            long threshold = Long.remainderUnsigned(-bound, bound);
            while (Long.compareUnsigned(low, threshold) < 0) {
                x = nextLong();
                low = x * bound;
            }
        }
        return unsignedMultiplyHigh(x, bound);
    }

    /** A uniform draw from [0, 1) with 53 bits of precision (Rust: `unit_f64`). */
    double unit() {
        return (nextLong() >>> 11) * UNIT_SCALE;
    }

    /** The high 64 bits of the unsigned 128-bit product, for 0 <= b < 2^63 (Java 17). */
    private static long unsignedMultiplyHigh(long a, long b) {
        return Math.multiplyHigh(a, b) + ((a >> 63) & b);
    }
}
