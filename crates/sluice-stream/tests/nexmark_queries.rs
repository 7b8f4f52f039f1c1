//! The Nexmark queries on a fixed seed, each checked against an independent computation:
//! plain Rust over the generated `Vec<Event>`, written from the query's definition (Flink
//! Nexmark's SQL, deviations as documented in `nexmark::queries`), with no stream API.
//! Where the stream's order is not defined (joins, windows firing together) results are
//! compared as sorted multisets.
//!
//! The stream: 20,000 events at 200 events/s of event time, so 100 s: ten q7/q8 windows,
//! ~50 q5 windows, auctions that open and close inside the stream (q4), and sessions that
//! end (q11). Watermarks follow every event (monotonous timestamps), as a generator
//! source's would.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use sluice_stream::nexmark::queries::{
    self, AuctionCount, AuctionPrice, BidderCount, CategoryAverage, EuroBid, HighestBid,
    LocalItemSuggestion, NewUser, WinningBid,
};
use sluice_stream::nexmark::{Auction, Bid, Event, Generator, GeneratorConfig, Person};
use sluice_stream::{
    CollectSink, CollectionSource, Collector, Context, DataStream, InMemoryCheckpointStorage,
    KeyedProcessFunction, ManualClock, RestartStrategy, SourceEvent, StreamError,
    StreamExecutionEnvironment, WatermarkEmission, WatermarkStrategy,
};

const EVENTS: u64 = 20_000;
const WINDOW_MS: i64 = 10_000;

fn events() -> Vec<Event> {
    let config = GeneratorConfig {
        seed: 7,
        max_events: EVENTS,
        events_per_second: 200,
        ..GeneratorConfig::default()
    };
    Generator::new(config).expect("valid config").collect()
}

fn bids(events: &[Event]) -> impl Iterator<Item = &Bid> {
    events.iter().filter_map(|event| match event {
        Event::Bid(bid) => Some(bid),
        _ => None,
    })
}

fn people(events: &[Event]) -> impl Iterator<Item = &Person> {
    events.iter().filter_map(|event| match event {
        Event::Person(person) => Some(person),
        _ => None,
    })
}

fn auctions(events: &[Event]) -> impl Iterator<Item = &Auction> {
    events.iter().filter_map(|event| match event {
        Event::Auction(auction) => Some(auction),
        _ => None,
    })
}

fn deterministic_env() -> (StreamExecutionEnvironment, ManualClock) {
    let clock = ManualClock::new(0);
    let mut env = StreamExecutionEnvironment::new();
    env.set_processing_time_clock(clock.clone())
        .set_watermark_emission(WatermarkEmission::AfterEveryEvent);
    (env, clock)
}

fn event_time_strategy() -> WatermarkStrategy<Event> {
    WatermarkStrategy::for_monotonous_timestamps()
        .with_timestamp_assigner(|event: &Event, _| event.timestamp_ms())
}

/// Runs `query` over `script` and returns what its sink received, in arrival order.
fn run_script<O: Clone + 'static>(
    env: &StreamExecutionEnvironment,
    script: Vec<SourceEvent<Event>>,
    query: impl Fn(&DataStream<Event>) -> DataStream<O>,
) -> Vec<O> {
    let source = env.from_source(
        CollectionSource::from_events(script),
        event_time_strategy(),
        "Nexmark",
    );
    let sink = CollectSink::new();
    query(&source).sink_to(sink.clone());
    env.execute("nexmark").expect("the query runs");
    sink.records()
}

fn run<O: Clone + 'static>(
    events: &[Event],
    query: impl Fn(&DataStream<Event>) -> DataStream<O>,
) -> Vec<O> {
    let (env, _clock) = deterministic_env();
    let script = events.iter().cloned().map(SourceEvent::Record).collect();
    run_script(&env, script, query)
}

fn sorted<T: Ord>(mut values: Vec<T>) -> Vec<T> {
    values.sort();
    values
}

/// Asserts equality and that the expectation is not trivially empty.
fn assert_same<T: PartialEq + std::fmt::Debug>(query: &str, actual: Vec<T>, expected: Vec<T>) {
    assert!(!expected.is_empty(), "{query}: the expectation is empty");
    println!("{query}: {} results", expected.len());
    assert_eq!(actual.len(), expected.len(), "{query}: result count");
    assert!(actual == expected, "{query}: results differ");
}

#[test]
fn q0_passes_every_bid_through() {
    let events = events();
    let expected: Vec<Bid> = bids(&events).cloned().collect();
    assert_same("q0", run(&events, queries::q0), expected);
}

#[test]
fn q1_converts_prices_to_euros() {
    let events = events();
    let expected: Vec<EuroBid> = bids(&events)
        .map(|bid| EuroBid {
            auction: bid.auction,
            bidder: bid.bidder,
            // 0.908 × price, in thousandths of a cent.
            price_thousandths_cent: bid.price * 908,
            date_time_ms: bid.date_time_ms,
            extra: bid.extra.clone(),
        })
        .collect();
    assert_same("q1", run(&events, queries::q1), expected);
}

#[test]
fn q2_selects_bids_on_every_123rd_auction() {
    let events = events();
    let expected: Vec<AuctionPrice> = bids(&events)
        .filter(|bid| bid.auction % 123 == 0)
        .map(|bid| AuctionPrice {
            auction: bid.auction,
            price: bid.price,
        })
        .collect();
    assert_same("q2", run(&events, queries::q2), expected);
}

#[test]
fn q3_joins_western_sellers_with_their_category_10_auctions() {
    let events = events();
    // Every (person, auction) pair of the SQL join, whatever arrived first.
    let mut expected = Vec::new();
    for person in people(&events).filter(|p| ["OR", "ID", "CA"].contains(&p.state.as_str())) {
        for auction in auctions(&events) {
            if auction.category == 10 && auction.seller == person.id {
                expected.push(LocalItemSuggestion {
                    name: person.name.clone(),
                    city: person.city.clone(),
                    state: person.state.clone(),
                    auction: auction.id,
                });
            }
        }
    }
    // The stream has auctions that arrive before their seller (the generator's person-id
    // lead), so the join's waiting side is exercised, not only the lookup.
    let position = |wanted: &Event| events.iter().position(|event| event == wanted);
    let early_auctions = auctions(&events)
        .filter(|auction| auction.category == 10)
        .filter(|auction| {
            people(&events).any(|person| {
                person.id == auction.seller
                    && ["OR", "ID", "CA"].contains(&person.state.as_str())
                    && position(&Event::Person(person.clone()))
                        > position(&Event::Auction((*auction).clone()))
            })
        })
        .count();
    assert!(early_auctions > 0, "no auction precedes its seller");
    assert_same("q3", sorted(run(&events, queries::q3)), sorted(expected));
}

/// q4's inner query by its SQL definition: per auction with a bid in
/// `[dateTime, expires]`, the highest such bid, whatever order the two arrived in.
fn expected_winning_bids(events: &[Event]) -> Vec<WinningBid> {
    let mut highest: HashMap<u64, u64> = HashMap::new();
    let auctions_by_id: HashMap<u64, &Auction> = auctions(events)
        .map(|auction| (auction.id, auction))
        .collect();
    for bid in bids(events) {
        let Some(auction) = auctions_by_id.get(&bid.auction) else {
            continue;
        };
        if (auction.date_time_ms..=auction.expires_ms).contains(&bid.date_time_ms) {
            let price = highest.entry(auction.id).or_insert(bid.price);
            *price = (*price).max(bid.price);
        }
    }
    highest
        .into_iter()
        .map(|(auction, price)| WinningBid {
            auction,
            category: auctions_by_id[&auction].category,
            price,
        })
        .collect()
}

#[test]
fn q4_winning_bids_are_the_highest_bids_within_each_auctions_lifetime() {
    let events = events();
    assert_same(
        "q4 winning bids",
        sorted(run(&events, queries::winning_bids)),
        sorted(expected_winning_bids(&events)),
    );
}

#[test]
fn q4_averages_winning_prices_per_category() {
    let events = events();
    let winning = expected_winning_bids(&events);
    let mut totals: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for bid in &winning {
        let (sum, count) = totals.entry(bid.category).or_default();
        *sum += bid.price;
        *count += 1;
    }
    let expected: Vec<CategoryAverage> = totals
        .into_iter()
        .map(|(category, (sum, count))| CategoryAverage {
            category,
            average_price: sum / count,
            auctions: count,
        })
        .collect();
    let updates = run(&events, queries::q4);
    // One update per closed auction; the last of each category is its final average.
    assert_eq!(updates.len(), winning.len());
    let mut last: BTreeMap<u64, CategoryAverage> = BTreeMap::new();
    for update in updates {
        last.insert(update.category, update);
    }
    assert_same("q4", last.into_values().collect(), expected);
}

#[test]
fn q5_finds_the_auctions_with_most_bids_per_sliding_window() {
    let events = events();
    let (size, slide) = (WINDOW_MS, 2_000);
    // (window start, auction) → bids; a bid is in the 5 windows whose start is a multiple
    // of the slide in (ts - size, ts].
    let mut counts: BTreeMap<(i64, u64), u64> = BTreeMap::new();
    for bid in bids(&events) {
        let last_start = bid.date_time_ms.div_euclid(slide) * slide;
        let mut start = last_start;
        while start > bid.date_time_ms - size {
            *counts.entry((start, bid.auction)).or_default() += 1;
            start -= slide;
        }
    }
    let mut max_per_window: BTreeMap<i64, u64> = BTreeMap::new();
    for (&(start, _), &count) in &counts {
        let max = max_per_window.entry(start).or_default();
        *max = (*max).max(count);
    }
    let expected: Vec<AuctionCount> = counts
        .iter()
        .filter(|((start, _), count)| **count == max_per_window[start])
        .map(|(&(start, auction), &count)| AuctionCount {
            window_start: start,
            window_end: start + size,
            auction,
            count,
        })
        .collect();
    assert!(
        max_per_window.len() > 40,
        "{} windows",
        max_per_window.len()
    );
    assert_same("q5", sorted(run(&events, queries::q5)), sorted(expected));
}

#[test]
fn q7_finds_the_highest_bids_per_tumbling_window() {
    let events = events();
    let mut max_price: BTreeMap<i64, u64> = BTreeMap::new();
    for bid in bids(&events) {
        let start = bid.date_time_ms.div_euclid(WINDOW_MS) * WINDOW_MS;
        let max = max_price.entry(start).or_default();
        *max = (*max).max(bid.price);
    }
    let expected: Vec<HighestBid> = bids(&events)
        .filter_map(|bid| {
            let start = bid.date_time_ms.div_euclid(WINDOW_MS) * WINDOW_MS;
            (bid.price == max_price[&start]).then(|| HighestBid {
                window_end: start + WINDOW_MS,
                auction: bid.auction,
                price: bid.price,
                bidder: bid.bidder,
                date_time_ms: bid.date_time_ms,
                extra: bid.extra.clone(),
            })
        })
        .collect();
    assert!(max_price.len() >= 10);
    assert_same("q7", sorted(run(&events, queries::q7)), sorted(expected));
}

#[test]
fn q8_finds_people_who_opened_an_auction_in_their_registration_window() {
    let events = events();
    let window = |timestamp: i64| timestamp.div_euclid(WINDOW_MS) * WINDOW_MS;
    let sellers: HashSet<(u64, i64)> = auctions(&events)
        .map(|auction| (auction.seller, window(auction.date_time_ms)))
        .collect();
    let expected: Vec<NewUser> = people(&events)
        .filter(|person| sellers.contains(&(person.id, window(person.date_time_ms))))
        .map(|person| NewUser {
            id: person.id,
            name: person.name.clone(),
            window_start: window(person.date_time_ms),
        })
        .collect();
    assert_same("q8", sorted(run(&events, queries::q8)), sorted(expected));
}

#[test]
fn q11_counts_bids_per_bidder_session() {
    let events = events();
    let gap = WINDOW_MS;
    let mut times: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    for bid in bids(&events) {
        times.entry(bid.bidder).or_default().push(bid.date_time_ms);
    }
    let mut expected = Vec::new();
    for (bidder, mut times) in times {
        times.sort();
        // A session is [first, last + gap); the next bid joins it if at or before its end
        // (windows that touch merge).
        let mut session: Option<BidderCount> = None;
        for time in times {
            match &mut session {
                Some(current) if time <= current.window_end => {
                    current.bid_count += 1;
                    current.window_end = current.window_end.max(time + gap);
                }
                _ => {
                    expected.extend(session.take());
                    session = Some(BidderCount {
                        bidder,
                        bid_count: 1,
                        window_start: time,
                        window_end: time + gap,
                    });
                }
            }
        }
        expected.extend(session);
    }
    assert_same("q11", sorted(run(&events, queries::q11)), sorted(expected));
}

#[test]
fn q12_counts_bids_per_bidder_in_processing_time_windows() {
    let events = events();
    // Processing time: an injected clock that moves 3 ms per event from an offset that is
    // not a window multiple, so windows cut the stream elsewhere than event time does.
    let processing_time = |index: usize| 1_000_003_500 + 3 * index as i64;
    let mut script = Vec::new();
    for (index, event) in events.iter().enumerate() {
        script.push(SourceEvent::ProcessingTime(processing_time(index)));
        script.push(SourceEvent::Record(event.clone()));
    }
    let end_ms = processing_time(events.len());
    // Past every window's end, so all fire before the input ends (open ones would not).
    script.push(SourceEvent::ProcessingTime(end_ms + WINDOW_MS));

    // A window fires as soon as processing time reaches its last millisecond, before the
    // records the source emits at that time: those start a second pane of the same window,
    // which fires at once (Flink's timer service behaves the same), so they are counted
    // apart.
    let mut counts: BTreeMap<(u64, i64, bool), u64> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        if let Event::Bid(bid) = event {
            let now = processing_time(index);
            let start = now.div_euclid(WINDOW_MS) * WINDOW_MS;
            let after_firing = now == start + WINDOW_MS - 1;
            *counts.entry((bid.bidder, start, after_firing)).or_default() += 1;
        }
    }
    let expected: Vec<BidderCount> = counts
        .into_iter()
        .map(|((bidder, start, _), bid_count)| BidderCount {
            bidder,
            bid_count,
            window_start: start,
            window_end: start + WINDOW_MS,
        })
        .collect();
    let (env, _clock) = deterministic_env();
    let actual = run_script(&env, script, queries::q12);
    assert_same("q12", sorted(actual), sorted(expected));
}

/// Passes events through, failing once at the `fail_at`-th.
struct FailOnce {
    seen: u64,
    fail_at: u64,
    failures_left: Rc<Cell<u32>>,
}

impl KeyedProcessFunction<u8, Event, Event> for FailOnce {
    fn process_element(
        &mut self,
        event: Event,
        _ctx: &mut Context<'_, u8>,
        out: &mut Collector<'_, Event>,
    ) -> Result<(), StreamError> {
        self.seen += 1;
        if self.seen == self.fail_at && self.failures_left.get() > 0 {
            self.failures_left.set(0);
            return Err(StreamError::Function("injected failure".to_string()));
        }
        out.collect(event);
        Ok(())
    }
}

/// The two-input queries' state (q3's sellers and waiting auctions, q4's open auctions
/// and their timers, q8's window buffers) survives a failure: restarted from the latest checkpoint,
/// the exactly-once output equals the independent computation.
#[test]
fn join_queries_recover_from_a_failure_through_checkpoints() {
    let events = events();
    let mut script = Vec::new();
    for (index, event) in events.iter().enumerate() {
        if index % 500 == 0 {
            script.push(SourceEvent::ProcessingTime(index as i64 / 5));
        }
        script.push(SourceEvent::Record(event.clone()));
    }
    let failures_left = Rc::new(Cell::new(1));
    let (mut env, _clock) = deterministic_env();
    env.enable_checkpointing(Duration::from_millis(250))
        .set_checkpoint_storage(InMemoryCheckpointStorage::new(2))
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    let source = env.from_source(
        CollectionSource::from_events(script),
        event_time_strategy(),
        "Nexmark",
    );
    let failures = failures_left.clone();
    let events_after_failure_point = source.key_by(|_: &Event| 0_u8).process(FailOnce {
        seen: 0,
        fail_at: 12_345,
        failures_left: failures,
    });
    let winning = CollectSink::exactly_once();
    let new_users = CollectSink::exactly_once();
    let suggestions = CollectSink::exactly_once();
    queries::winning_bids(&events_after_failure_point).sink_to(winning.clone());
    queries::q8(&events_after_failure_point).sink_to(new_users.clone());
    queries::q3(&events_after_failure_point).sink_to(suggestions.clone());
    let result = env.execute("nexmark-recovery").expect("the job recovers");
    assert_eq!(failures_left.get(), 0, "the failure was injected");
    assert_eq!(result.num_restarts, 1);
    assert!(result.restored_checkpoint_id.is_some(), "{result:?}");
    assert_same(
        "q4 winning bids after recovery",
        sorted(winning.records()),
        sorted(expected_winning_bids(&events)),
    );
    let q8_clean = run(&events, queries::q8);
    assert_same(
        "q8 after recovery",
        sorted(new_users.records()),
        sorted(q8_clean),
    );
    assert_same(
        "q3 after recovery",
        sorted(suggestions.records()),
        sorted(run(&events, queries::q3)),
    );
}
