package sluice.nexmark.flink;

import java.io.Serializable;

/**
 * `sluice_stream::nexmark::GeneratorConfig` with the same defaults (the reference's
 * `NexmarkConfiguration`) and the same event-number arithmetic. Only the fields the driver
 * sets (seed, maxEvents, eventsPerSecond) are exposed as options; the rest keep their
 * defaults, as in `crates/sluice-stream/examples/nexmark.rs`.
 */
public final class GeneratorConfig implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final long FIRST_PERSON_ID = 1000;
    public static final long FIRST_AUCTION_ID = 1000;
    public static final long FIRST_CATEGORY_ID = 10;
    public static final long CATEGORY_COUNT = 5;
    /** Beam's fixed BASE_TIME, 2015-07-15T00:00:00Z. */
    public static final long BEAM_BASE_TIME_MS = 1_436_918_400_000L;
    /** Rust: `EVENTS_LIMIT`, 2^48. */
    public static final long EVENTS_LIMIT = 1L << 48;

    public long seed = 0;
    public long firstEventId = 0;
    public long maxEvents = 100_000_000L;
    public long eventsPerSecond = 10_000;
    public long baseTimeMs = BEAM_BASE_TIME_MS;
    public long personProportion = 1;
    public long auctionProportion = 3;
    public long bidProportion = 46;
    public long avgPersonByteSize = 200;
    public long avgAuctionByteSize = 500;
    public long avgBidByteSize = 100;
    public long hotAuctionRatio = 2;
    public long hotSellersRatio = 4;
    public long hotBiddersRatio = 4;
    public long numInFlightAuctions = 100;
    public long numActivePeople = 1000;
    public long outOfOrderGroupSize = 1;
    public long personIdLead = 10;
    public long auctionIdLead = 10;

    /** The subset of Rust's `validate` that the driver's options can violate. */
    public void validate() {
        if (eventsPerSecond < 1) {
            throw new IllegalArgumentException("events_per_second must be at least 1");
        }
        if (maxEvents < 0 || maxEvents > EVENTS_LIMIT) {
            throw new IllegalArgumentException("max_events must be at most 2^48");
        }
    }

    public long totalProportion() {
        return personProportion + auctionProportion + bidProportion;
    }

    /** Rust: `adjusted_event_number` (the reference's out-of-order shuffle, 953). */
    public long adjustedEventNumber(long eventNumber) {
        long groupSize = outOfOrderGroupSize;
        if (groupSize == 1) {
            return eventNumber;
        }
        long groupStart = eventNumber / groupSize * groupSize;
        return groupStart + (eventNumber % groupSize) * 953 % groupSize;
    }

    /** Rust: `event_timestamp_ms`, exact integer arithmetic. */
    public long eventTimestampMs(long adjustedEventNumber) {
        return baseTimeMs + timestampOffsetMs(adjustedEventNumber);
    }

    private long timestampOffsetMs(long eventNumber) {
        // eventNumber < 2^49 here, so the product stays below 2^59: no 128-bit need.
        return eventNumber * 1000 / eventsPerSecond;
    }

    /** Rust: `auction_horizon_events`. */
    public long auctionHorizonEvents() {
        return numInFlightAuctions * totalProportion() / auctionProportion;
    }
}
