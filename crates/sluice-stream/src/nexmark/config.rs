//! What the generator generates: the reference's `NexmarkConfiguration` and
//! `GeneratorConfig` in one struct, with the reference defaults, and the event-number
//! arithmetic (event ids, timestamps, out-of-order groups) that every generator shares.

use super::error::NexmarkError;

/// Ids start above zero so that queries find matches even on small streams (reference).
pub const FIRST_PERSON_ID: u64 = 1000;
pub const FIRST_AUCTION_ID: u64 = 1000;
pub const FIRST_CATEGORY_ID: u64 = 10;
/// Few categories, so that per-category queries find results on small streams (reference:
/// `AuctionGenerator.NUM_CATEGORIES`).
pub const CATEGORY_COUNT: u64 = 5;
/// Beam's fixed `BASE_TIME`, 2015-07-15T00:00:00Z: a deterministic event-time origin.
/// (Flink's Nexmark source uses the wall clock at start instead.)
pub const BEAM_BASE_TIME_MS: i64 = 1_436_918_400_000;
/// Default number of events: Flink Nexmark's `nexmark.events.num` benchmark setting.
pub const DEFAULT_MAX_EVENTS: u64 = 100_000_000;
/// The largest `max_events` and `first_event_id` accepted: 2^48 events (about 9 years at a
/// million events per second) keeps every id and timestamp computation far from overflow.
pub const EVENTS_LIMIT: u64 = 1 << 48;
/// The largest value accepted for a proportion, ratio, size or count field: bounds the
/// products the generator computes from them.
pub const FIELD_LIMIT: u64 = 1 << 32;

/// Parameters of a generated stream. Field names follow the reference's
/// `NexmarkConfiguration`; defaults are the reference's (see `Default`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Seeds every random choice; the same seed and config give the same events.
    pub seed: u64,
    /// Event id of event number 0 (reference: `firstEventId`; Beam's launcher uses 0).
    /// The id decides the event's kind and the ids it refers to.
    pub first_event_id: u64,
    /// Number of events in the stream, over all partitions (reference: `numEvents`, where
    /// 0 meant unbounded; here it must be given, at most `EVENTS_LIMIT`).
    pub max_events: u64,
    /// Event-time rate over all partitions (reference: `firstEventRate`, per second):
    /// event number `n` has timestamp `base_time_ms + floor(n * 1000 / events_per_second)`.
    pub events_per_second: u64,
    /// Timestamp of event number 0 (reference: `baseTime`).
    pub base_time_ms: i64,
    /// Of every `person + auction + bid` consecutive event ids, the first `person_proportion`
    /// are people, the next `auction_proportion` auctions, the rest bids.
    pub person_proportion: u64,
    pub auction_proportion: u64,
    pub bid_proportion: u64,
    /// Average idealized size of each event kind in bytes (8 per number plus string
    /// lengths); `extra` pads each event to around it.
    pub avg_person_byte_size: u64,
    pub avg_auction_byte_size: u64,
    pub avg_bid_byte_size: u64,
    /// A bid is for the current hot auction with probability `1 - 1/hot_auction_ratio`.
    pub hot_auction_ratio: u64,
    /// An auction is by the current hot seller with probability `1 - 1/hot_sellers_ratio`.
    pub hot_sellers_ratio: u64,
    /// A bid is by the current hot bidder with probability `1 - 1/hot_bidders_ratio`.
    pub hot_bidders_ratio: u64,
    /// Auctions considered open when choosing a random auction to bid on; also sets the
    /// average auction length (the time until this many more auctions are generated).
    pub num_in_flight_auctions: u64,
    /// People considered active when choosing a random seller or bidder.
    pub num_active_people: u64,
    /// Events are shuffled within groups of this many event numbers; 1 keeps event time
    /// in order (reference: `outOfOrderGroupSize`).
    pub out_of_order_group_size: u64,
    /// How far past the last generated person a random seller or bidder may point
    /// (reference: the private constant `PERSON_ID_LEAD`), so that some references arrive
    /// before the person they refer to, as in a real system.
    pub person_id_lead: u64,
    /// How far past the last generated auction a random bid may point (reference:
    /// `AUCTION_ID_LEAD`).
    pub auction_id_lead: u64,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            first_event_id: 0,
            max_events: DEFAULT_MAX_EVENTS,
            events_per_second: 10_000,
            base_time_ms: BEAM_BASE_TIME_MS,
            person_proportion: 1,
            auction_proportion: 3,
            bid_proportion: 46,
            avg_person_byte_size: 200,
            avg_auction_byte_size: 500,
            avg_bid_byte_size: 100,
            hot_auction_ratio: 2,
            hot_sellers_ratio: 4,
            hot_bidders_ratio: 4,
            num_in_flight_auctions: 100,
            num_active_people: 1000,
            out_of_order_group_size: 1,
            person_id_lead: 10,
            auction_id_lead: 10,
        }
    }
}

fn invalid(field: &'static str, reason: &'static str) -> NexmarkError {
    NexmarkError::InvalidConfig { field, reason }
}

impl GeneratorConfig {
    /// Checks every bound the generator relies on, so that generating never panics or
    /// overflows.
    pub fn validate(&self) -> Result<(), NexmarkError> {
        let at_least_one = [
            ("person_proportion", self.person_proportion),
            ("auction_proportion", self.auction_proportion),
            ("events_per_second", self.events_per_second),
            ("hot_auction_ratio", self.hot_auction_ratio),
            ("hot_sellers_ratio", self.hot_sellers_ratio),
            ("hot_bidders_ratio", self.hot_bidders_ratio),
            ("num_active_people", self.num_active_people),
            ("out_of_order_group_size", self.out_of_order_group_size),
        ];
        for (field, value) in at_least_one {
            if value == 0 {
                return Err(invalid(field, "must be at least 1"));
            }
        }
        let bounded = [
            ("person_proportion", self.person_proportion),
            ("auction_proportion", self.auction_proportion),
            ("bid_proportion", self.bid_proportion),
            ("avg_person_byte_size", self.avg_person_byte_size),
            ("avg_auction_byte_size", self.avg_auction_byte_size),
            ("avg_bid_byte_size", self.avg_bid_byte_size),
            ("hot_auction_ratio", self.hot_auction_ratio),
            ("hot_sellers_ratio", self.hot_sellers_ratio),
            ("hot_bidders_ratio", self.hot_bidders_ratio),
            ("num_in_flight_auctions", self.num_in_flight_auctions),
            ("num_active_people", self.num_active_people),
            ("out_of_order_group_size", self.out_of_order_group_size),
            ("person_id_lead", self.person_id_lead),
            ("auction_id_lead", self.auction_id_lead),
        ];
        for (field, value) in bounded {
            if value > FIELD_LIMIT {
                return Err(invalid(field, "must be at most 2^32"));
            }
        }
        if self.max_events > EVENTS_LIMIT {
            return Err(invalid("max_events", "must be at most 2^48"));
        }
        if self.first_event_id > EVENTS_LIMIT {
            return Err(invalid("first_event_id", "must be at most 2^48"));
        }
        // The latest timestamp the generator computes: an auction's horizon, looking
        // `auction_horizon_events` past the last event (rounded up to its group's end).
        let last_event_number = self.max_events + self.out_of_order_group_size;
        let latest_offset_ms =
            self.timestamp_offset_ms(last_event_number + self.auction_horizon_events());
        // Expiry draws up to twice the horizon past the auction's own time.
        let latest_ms = i64::try_from(latest_offset_ms.saturating_mul(3))
            .ok()
            .and_then(|offset_ms| self.base_time_ms.checked_add(offset_ms));
        if latest_ms.is_none() {
            return Err(invalid(
                "base_time_ms",
                "overflows an i64 timestamp by the end of the stream",
            ));
        }
        Ok(())
    }

    /// Events per cycle of kinds: 50 with the defaults.
    pub fn total_proportion(&self) -> u64 {
        self.person_proportion + self.auction_proportion + self.bid_proportion
    }

    /// The event number whose id and timestamp event number `event_number` takes: itself,
    /// or a fixed shuffle of its group of `out_of_order_group_size` numbers (reference:
    /// `nextAdjustedEventNumber`; 953 is the reference's multiplier).
    pub fn adjusted_event_number(&self, event_number: u64) -> u64 {
        let group_size = self.out_of_order_group_size;
        if group_size == 1 {
            return event_number;
        }
        let group_start = event_number / group_size * group_size;
        group_start + (event_number % group_size) * 953 % group_size
    }

    /// The event id of event number `event_number`: what decides its kind and ids.
    pub fn event_id(&self, event_number: u64) -> u64 {
        self.first_event_id + self.adjusted_event_number(event_number)
    }

    /// The event time of event number `event_number` (after adjustment), from exact
    /// integer arithmetic.
    pub fn event_timestamp_ms(&self, adjusted_event_number: u64) -> i64 {
        let offset_ms = i64::try_from(self.timestamp_offset_ms(adjusted_event_number))
            .expect("validate bounds timestamps to i64");
        self.base_time_ms + offset_ms
    }

    /// A timestamp no later than any event from event number `event_number` on: the start
    /// of its out-of-order group (reference: `nextEventNumberForWatermark`).
    pub fn watermark_ms(&self, event_number: u64) -> i64 {
        let group_size = self.out_of_order_group_size;
        self.event_timestamp_ms(event_number / group_size * group_size)
    }

    fn timestamp_offset_ms(&self, event_number: u64) -> u64 {
        let offset_ms = u128::from(event_number) * 1000 / u128::from(self.events_per_second);
        u64::try_from(offset_ms).unwrap_or(u64::MAX)
    }

    /// How many events it takes to generate `num_in_flight_auctions` auctions: the horizon
    /// that sets the average auction length.
    pub(crate) fn auction_horizon_events(&self) -> u64 {
        self.num_in_flight_auctions * self.total_proportion() / self.auction_proportion
    }
}
