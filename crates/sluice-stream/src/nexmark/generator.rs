//! The event generator: event number → event, as a pure function of the config, and an
//! iterator over a stream or one partition of it.
//!
//! Each event is computed from its event id alone (plus the seed): its kind from
//! `id % total_proportion`, the ids it creates and refers to from arithmetic on the id, its
//! time from its number and the rate, and its random fields from a SplitMix64 stream
//! seeded with the id. So partition `i` of `n` can generate event numbers `i, i + n, ...`
//! without seeing the others, and a restarted source resumes from a count.

use std::sync::Arc;

use super::config::{
    CATEGORY_COUNT, FIRST_AUCTION_ID, FIRST_CATEGORY_ID, FIRST_PERSON_ID, GeneratorConfig,
};
use super::error::NexmarkError;
use super::model::{Auction, Bid, Event, Person};
use super::random::{EventRandom, StreamDomain};

/// The hot seller is the first person of the latest batch of this many people (reference:
/// `AuctionGenerator.HOT_SELLER_RATIO`, a batch size despite its name).
const HOT_SELLER_BATCH: u64 = 100;
/// The hot auction is the first auction of the latest batch of this many (reference:
/// `BidGenerator.HOT_AUCTION_RATIO`).
const HOT_AUCTION_BATCH: u64 = 100;
/// The hot bidder is the second person of the latest batch of this many, so hot bidders
/// and hot sellers differ (reference: `BidGenerator.HOT_BIDDER_RATIO`).
const HOT_BIDDER_BATCH: u64 = 100;
/// A bid comes through a hot channel with probability `1 - 1/HOT_CHANNELS_RATIO`.
const HOT_CHANNELS_RATIO: u64 = 2;
/// Other bids come through `channel-0` .. `channel-9999`.
const CHANNEL_COUNT: u64 = 10_000;
const HOT_CHANNELS: [&str; 4] = ["Google", "Facebook", "Baidu", "Apple"];
/// Few states and cities, so that queries filtering on them find results (reference).
const US_STATES: [&str; 6] = ["AZ", "CA", "ID", "OR", "WA", "WY"];
const US_CITIES: [&str; 10] = [
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
const FIRST_NAMES: [&str; 11] = [
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
const LAST_NAMES: [&str; 9] = [
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];
/// Random strings are at least this long before trimming (reference).
const MIN_STRING_LENGTH: u64 = 3;

/// The channel names and URLs bids use, computed once per seed and shared by the
/// partitions of a stream. The reference caches each channel's URL on first use, drawn
/// from an unseeded `Random`; here each channel's URL comes from its own seeded stream.
struct ChannelTable {
    hot: Vec<(String, String)>,
    other: Vec<(String, String)>,
}

impl ChannelTable {
    /// About 10,000 short strings: ~1 MB and a millisecond, paid once per stream rather
    /// than a URL's three random strings per bid.
    fn new(seed: u64) -> Self {
        let hot = HOT_CHANNELS
            .iter()
            .zip(0u64..)
            .map(|(name, index)| {
                let mut random = EventRandom::for_stream(seed, StreamDomain::HotChannel, index);
                ((*name).to_owned(), base_url(&mut random))
            })
            .collect();
        let other = (0..CHANNEL_COUNT)
            .map(|number| {
                let mut random = EventRandom::for_stream(seed, StreamDomain::Channel, number);
                let mut url = base_url(&mut random);
                if random.below(10) > 0 {
                    // The reference's odd but observable channel id: the bit-reversed
                    // number as a Java int, with Java's `Math.abs` (which keeps i32::MIN).
                    let channel_id = (number as i32).reverse_bits().wrapping_abs();
                    url.push_str(&format!("&channel_id={channel_id}"));
                }
                (format!("channel-{number}"), url)
            })
            .collect();
        Self { hot, other }
    }
}

impl std::fmt::Debug for ChannelTable {
    /// Counts only: ten thousand URLs would bury whatever a `Generator` is printed for.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ChannelTable")
            .field("hot", &self.hot.len())
            .field("other", &self.other.len())
            .finish()
    }
}

fn base_url(random: &mut EventRandom) -> String {
    format!(
        "https://www.nexmark.com/{}/{}/{}/item.htm?query=1",
        next_string(random, 5, '_'),
        next_string(random, 5, '_'),
        next_string(random, 5, '_'),
    )
}

/// Generates the events of a stream, or of one partition of it, in event-number order.
///
/// Partition `index` of `count` yields event numbers `index, index + count, ...` below
/// `max_events`; the partitions of a stream, merged round-robin, are the unsplit stream.
#[derive(Clone, Debug)]
pub struct Generator {
    config: GeneratorConfig,
    channels: Arc<ChannelTable>,
    partition_index: u64,
    partition_count: u64,
    /// Events this generator has yielded: the position a source checkpoints.
    events_emitted: u64,
}

impl Generator {
    /// The whole stream.
    pub fn new(config: GeneratorConfig) -> Result<Self, NexmarkError> {
        Self::for_partition(config, 0, 1)
    }

    /// Partition `partition_index` of `partition_count`.
    pub fn for_partition(
        config: GeneratorConfig,
        partition_index: u64,
        partition_count: u64,
    ) -> Result<Self, NexmarkError> {
        config.validate()?;
        if partition_index >= partition_count {
            return Err(NexmarkError::InvalidPartition {
                index: partition_index,
                count: partition_count,
            });
        }
        let channels = Arc::new(ChannelTable::new(config.seed));
        Ok(Self {
            config,
            channels,
            partition_index,
            partition_count,
            events_emitted: 0,
        })
    }

    /// All `partition_count` partitions of the stream, sharing one channel table.
    pub fn split(config: GeneratorConfig, partition_count: u64) -> Result<Vec<Self>, NexmarkError> {
        let first = Self::for_partition(config, 0, partition_count)?;
        let others = (1..partition_count).map(|partition_index| Self {
            partition_index,
            ..first.clone()
        });
        Ok(std::iter::once(first.clone()).chain(others).collect())
    }

    pub fn config(&self) -> &GeneratorConfig {
        &self.config
    }

    /// Events yielded so far: store it in a checkpoint and pass it to
    /// [`Generator::resume_at`] on restore.
    pub fn events_emitted(&self) -> u64 {
        self.events_emitted
    }

    /// Continues as if `events_emitted` events had been yielded (clamped to the end).
    pub fn resume_at(&mut self, events_emitted: u64) {
        self.events_emitted = events_emitted.min(self.partition_event_count());
    }

    /// A timestamp no later than that of any event still to come from this generator.
    pub fn watermark_ms(&self) -> i64 {
        self.config.watermark_ms(self.next_event_number())
    }

    /// The event with global number `event_number`, whichever partition yields it, or
    /// `None` past `max_events`.
    pub fn event_at(&self, event_number: u64) -> Option<Event> {
        if event_number >= self.config.max_events {
            return None;
        }
        Some(self.generate(event_number))
    }

    fn generate(&self, event_number: u64) -> Event {
        debug_assert!(event_number < self.config.max_events);
        let config = &self.config;
        let adjusted_event_number = config.adjusted_event_number(event_number);
        let event_id = config.first_event_id + adjusted_event_number;
        let timestamp_ms = config.event_timestamp_ms(adjusted_event_number);
        let mut random = EventRandom::for_stream(config.seed, StreamDomain::Event, event_id);
        let kind = event_id % config.total_proportion();
        if kind < config.person_proportion {
            Event::Person(next_person(config, event_id, &mut random, timestamp_ms))
        } else if kind < config.person_proportion + config.auction_proportion {
            Event::Auction(next_auction(
                config,
                adjusted_event_number,
                event_id,
                &mut random,
                timestamp_ms,
            ))
        } else {
            Event::Bid(next_bid(
                config,
                &self.channels,
                event_id,
                &mut random,
                timestamp_ms,
            ))
        }
    }

    fn next_event_number(&self) -> u64 {
        self.partition_index + self.events_emitted * self.partition_count
    }

    fn partition_event_count(&self) -> u64 {
        let max_events = self.config.max_events;
        if self.partition_index >= max_events {
            return 0;
        }
        (max_events - self.partition_index - 1) / self.partition_count + 1
    }
}

impl Iterator for Generator {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.events_emitted >= self.partition_event_count() {
            return None;
        }
        let event = self.generate(self.next_event_number());
        self.events_emitted += 1;
        Some(event)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let remaining = self.partition_event_count() - self.events_emitted;
        let remaining = usize::try_from(remaining).unwrap_or(usize::MAX);
        (remaining, Some(remaining))
    }

    /// Skips without generating the skipped events.
    fn nth(&mut self, skipped: usize) -> Option<Event> {
        let skipped = u64::try_from(skipped).unwrap_or(u64::MAX);
        self.resume_at(self.events_emitted.saturating_add(skipped));
        self.next()
    }
}

/// Base-0 id of the last person generated at or before event id `event_id` (the event's
/// own person if it is one). Reference: `PersonGenerator.lastBase0PersonId`.
fn last_base0_person_id(config: &GeneratorConfig, event_id: u64) -> u64 {
    let epoch = event_id / config.total_proportion();
    let offset = (event_id % config.total_proportion()).min(config.person_proportion - 1);
    epoch * config.person_proportion + offset
}

/// Base-0 id of the last auction generated at or before event id `event_id`, or `None`
/// before the first auction. Reference: `AuctionGenerator.lastBase0AuctionId`.
fn last_base0_auction_id(config: &GeneratorConfig, event_id: u64) -> Option<u64> {
    let epoch = event_id / config.total_proportion();
    let offset = event_id % config.total_proportion();
    let person_proportion = config.person_proportion;
    let auction_proportion = config.auction_proportion;
    if offset < person_proportion {
        // A person: the last auction is the previous epoch's last.
        (epoch * auction_proportion).checked_sub(1)
    } else if offset < person_proportion + auction_proportion {
        Some(epoch * auction_proportion + offset - person_proportion)
    } else {
        Some(epoch * auction_proportion + auction_proportion - 1)
    }
}

/// A random person among the active ones, or up to `person_id_lead` not generated yet.
/// Reference: `PersonGenerator.nextBase0PersonId`.
fn next_base0_person_id(config: &GeneratorConfig, event_id: u64, random: &mut EventRandom) -> u64 {
    let people = last_base0_person_id(config, event_id) + 1;
    let active_people = people.min(config.num_active_people);
    people - active_people + random.below(active_people + config.person_id_lead)
}

/// A random auction among those likely in flight, or up to `auction_id_lead` not generated
/// yet. Reference: `AuctionGenerator.nextBase0AuctionId`.
fn next_base0_auction_id(
    config: &GeneratorConfig,
    last_auction: u64,
    random: &mut EventRandom,
) -> u64 {
    let min_auction = last_auction.saturating_sub(config.num_in_flight_auctions);
    min_auction + random.below(last_auction - min_auction + 1 + config.auction_id_lead)
}

fn next_person(
    config: &GeneratorConfig,
    event_id: u64,
    random: &mut EventRandom,
    timestamp_ms: i64,
) -> Person {
    let id = last_base0_person_id(config, event_id) + FIRST_PERSON_ID;
    let name = format!(
        "{} {}",
        pick(random, &FIRST_NAMES),
        pick(random, &LAST_NAMES)
    );
    let email_address = format!(
        "{}@{}.com",
        next_string(random, 7, ' '),
        next_string(random, 5, ' ')
    );
    let credit_card = format!(
        "{:04} {:04} {:04} {:04}",
        random.below(10_000),
        random.below(10_000),
        random.below(10_000),
        random.below(10_000)
    );
    let city = pick(random, &US_CITIES).to_owned();
    let state = pick(random, &US_STATES).to_owned();
    let current_size =
        8 + name.len() + email_address.len() + credit_card.len() + city.len() + state.len();
    let extra = next_extra(random, current_size as u64, config.avg_person_byte_size);
    Person {
        id,
        name,
        email_address,
        credit_card,
        city,
        state,
        date_time_ms: timestamp_ms,
        extra,
    }
}

fn next_auction(
    config: &GeneratorConfig,
    adjusted_event_number: u64,
    event_id: u64,
    random: &mut EventRandom,
    timestamp_ms: i64,
) -> Auction {
    let id = last_base0_auction_id(config, event_id).expect("an auction event is an auction")
        + FIRST_AUCTION_ID;
    let seller = if random.below(config.hot_sellers_ratio) > 0 {
        last_base0_person_id(config, event_id) / HOT_SELLER_BATCH * HOT_SELLER_BATCH
    } else {
        next_base0_person_id(config, event_id, random)
    } + FIRST_PERSON_ID;
    let category = FIRST_CATEGORY_ID + random.below(CATEGORY_COUNT);
    let initial_bid = next_price(random);
    let expires_ms =
        timestamp_ms + next_auction_length_ms(config, adjusted_event_number, random, timestamp_ms);
    let item_name = next_string(random, 20, ' ');
    let description = next_string(random, 100, ' ');
    let reserve = initial_bid + next_price(random);
    let current_size = 8 + item_name.len() + description.len() + 8 + 8 + 8 + 8 + 8;
    let extra = next_extra(random, current_size as u64, config.avg_auction_byte_size);
    Auction {
        id,
        item_name,
        description,
        initial_bid,
        reserve,
        date_time_ms: timestamp_ms,
        expires_ms,
        seller,
        category,
        extra,
    }
}

/// A length averaging the time until `num_in_flight_auctions` more auctions exist, so that
/// about that many are open at once. Reference: `AuctionGenerator.nextAuctionLengthMs`.
fn next_auction_length_ms(
    config: &GeneratorConfig,
    adjusted_event_number: u64,
    random: &mut EventRandom,
    timestamp_ms: i64,
) -> i64 {
    let horizon_event_number = adjusted_event_number + config.auction_horizon_events();
    let horizon_ms = config.event_timestamp_ms(horizon_event_number) - timestamp_ms;
    let spread_ms = u64::try_from(horizon_ms * 2).unwrap_or(0).max(1);
    1 + random.below(spread_ms) as i64
}

fn next_bid(
    config: &GeneratorConfig,
    channels: &ChannelTable,
    event_id: u64,
    random: &mut EventRandom,
    timestamp_ms: i64,
) -> Bid {
    let last_auction =
        last_base0_auction_id(config, event_id).expect("a bid follows its epoch's auctions");
    let auction = if random.below(config.hot_auction_ratio) > 0 {
        last_auction / HOT_AUCTION_BATCH * HOT_AUCTION_BATCH
    } else {
        next_base0_auction_id(config, last_auction, random)
    } + FIRST_AUCTION_ID;
    let bidder = if random.below(config.hot_bidders_ratio) > 0 {
        last_base0_person_id(config, event_id) / HOT_BIDDER_BATCH * HOT_BIDDER_BATCH + 1
    } else {
        next_base0_person_id(config, event_id, random)
    } + FIRST_PERSON_ID;
    let price = next_price(random);
    let (channel, url) = if random.below(HOT_CHANNELS_RATIO) > 0 {
        &channels.hot[random.below(channels.hot.len() as u64) as usize]
    } else {
        &channels.other[random.below(CHANNEL_COUNT) as usize]
    };
    let current_size = 8 + 8 + 8 + 8;
    let extra = next_extra(random, current_size, config.avg_bid_byte_size);
    Bid {
        auction,
        bidder,
        price,
        channel: channel.clone(),
        url: url.clone(),
        date_time_ms: timestamp_ms,
        extra,
    }
}

fn pick<'a>(random: &mut EventRandom, choices: &[&'a str]) -> &'a str {
    choices[random.below(choices.len() as u64) as usize]
}

/// A price in cents, log-uniform from $1 to $1,000,000. Reference: `PriceGenerator`.
fn next_price(random: &mut EventRandom) -> u64 {
    (10f64.powf(random.unit_f64() * 6.0) * 100.0).round() as u64
}

/// A string of 3 to `max_length - 1` characters, lowercase letters with one in 13 being
/// `special`, then trimmed of spaces. Reference: `StringsGenerator.nextString`.
fn next_string(random: &mut EventRandom, max_length: u64, special: char) -> String {
    let length = MIN_STRING_LENGTH + random.below(max_length - MIN_STRING_LENGTH);
    let mut text = String::with_capacity(length as usize);
    for _ in 0..length {
        if random.below(13) == 0 {
            text.push(special);
        } else {
            text.push(char::from(b'a' + random.below(26) as u8));
        }
    }
    let trimmed = text.trim();
    if trimmed.len() == text.len() {
        text
    } else {
        trimmed.to_owned()
    }
}

/// Exactly `length` lowercase letters, 13 per random draw (26^13 < 2^64). Reference:
/// `StringsGenerator.nextExactString`, which takes 6 per 31-bit `nextInt`.
fn next_exact_string(random: &mut EventRandom, length: u64) -> String {
    let mut text = String::with_capacity(length as usize);
    let mut bits = 0u64;
    let mut letters_left = 0;
    for _ in 0..length {
        if letters_left == 0 {
            bits = random.next_u64();
            letters_left = 13;
        }
        text.push(char::from(b'a' + (bits % 26) as u8));
        bits /= 26;
        letters_left -= 1;
    }
    text
}

/// Padding such that `current_size + padding.len()` averages `desired_average_size`:
/// uniform within ±20% of the missing size. Reference: `StringsGenerator.nextExtra`.
fn next_extra(random: &mut EventRandom, current_size: u64, desired_average_size: u64) -> String {
    if current_size > desired_average_size {
        return String::new();
    }
    let missing_size = desired_average_size - current_size;
    // Java's Math.round(missing * 0.2) for a non-negative integer, without floating point.
    let delta = (missing_size * 2 + 5) / 10;
    let min_size = missing_size - delta;
    let size = if delta == 0 {
        min_size
    } else {
        min_size + random.below(2 * delta)
    };
    next_exact_string(random, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_ids_follow_the_reference_arithmetic() {
        let config = GeneratorConfig::default();
        // (event id, last base-0 person, last base-0 auction): ids 0 | 1..=3 | 4..=49 per
        // epoch of 50 are person | auctions | bids.
        let cases = [
            (0, 0, None),
            (1, 0, Some(0)),
            (3, 0, Some(2)),
            (4, 0, Some(2)),
            (49, 0, Some(2)),
            (50, 1, Some(2)),
            (51, 1, Some(3)),
            (99, 1, Some(5)),
            (100, 2, Some(5)),
            (5_000, 100, Some(299)),
        ];
        for (event_id, person, auction) in cases {
            assert_eq!(
                last_base0_person_id(&config, event_id),
                person,
                "person at {event_id}"
            );
            assert_eq!(
                last_base0_auction_id(&config, event_id),
                auction,
                "auction at {event_id}"
            );
        }
    }

    #[test]
    fn out_of_order_groups_are_permutations_of_their_numbers() {
        for group_size in [1u64, 2, 7, 10, 1000] {
            let config = GeneratorConfig {
                out_of_order_group_size: group_size,
                ..GeneratorConfig::default()
            };
            let numbers = 3 * group_size;
            let mut adjusted: Vec<u64> = (0..numbers)
                .map(|number| config.adjusted_event_number(number))
                .collect();
            for (number, value) in adjusted.iter().enumerate() {
                assert_eq!(*value / group_size, number as u64 / group_size);
            }
            adjusted.sort_unstable();
            assert_eq!(
                adjusted,
                (0..numbers).collect::<Vec<_>>(),
                "group {group_size}"
            );
        }
    }

    #[test]
    fn strings_have_the_reference_shapes() {
        let mut random = EventRandom::for_stream(3, StreamDomain::Event, 3);
        for _ in 0..1000 {
            let text = next_string(&mut random, 20, ' ');
            assert!(text.len() < 20);
            assert_eq!(text, text.trim());
            assert!(text.chars().all(|c| c == ' ' || c.is_ascii_lowercase()));
            let exact = next_exact_string(&mut random, 37);
            assert_eq!(exact.len(), 37);
            assert!(exact.chars().all(|c| c.is_ascii_lowercase()));
            let extra = next_extra(&mut random, 32, 100);
            // Missing 68: delta round(13.6) = 14, so 54..=81 characters.
            assert!((54..82).contains(&extra.len()), "{}", extra.len());
            let price = next_price(&mut random);
            assert!((100..=100_000_000).contains(&price), "{price}");
        }
        assert_eq!(next_extra(&mut random, 300, 200), "");
    }

    #[test]
    fn channel_urls_have_the_reference_form() {
        let table = ChannelTable::new(9);
        assert_eq!(table.other.len() as u64, CHANNEL_COUNT);
        assert_eq!(table.other[17].0, "channel-17");
        for (_, url) in table.hot.iter().chain(&table.other) {
            assert!(url.starts_with("https://www.nexmark.com/"), "{url}");
            assert!(url.contains("/item.htm?query=1"), "{url}");
        }
        let with_id = table
            .other
            .iter()
            .filter(|(_, url)| url.contains("&channel_id="))
            .count();
        assert!((8_500..9_500).contains(&with_id), "{with_id}");
        // Channel 1's id is the reversed bits of 1 as a Java int: i32::MIN, kept by abs.
        if table.other[1].1.contains("&channel_id=") {
            assert!(table.other[1].1.ends_with("&channel_id=-2147483648"));
        }
    }
}
