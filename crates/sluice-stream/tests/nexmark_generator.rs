//! The Nexmark generator as a source sees it: the event mix, determinism per seed, ids that
//! refer to people and auctions as the reference model does, event time from the rate,
//! partitions that add up to the stream, and the JSON form that goes into a topic.

use sluice_stream::nexmark::{
    BEAM_BASE_TIME_MS, CATEGORY_COUNT, Event, EventType, FIRST_AUCTION_ID, FIRST_CATEGORY_ID,
    FIRST_PERSON_ID, Generator, GeneratorConfig, NexmarkError,
};

fn config(max_events: u64) -> GeneratorConfig {
    GeneratorConfig {
        seed: 42,
        max_events,
        ..GeneratorConfig::default()
    }
}

fn generate(config: GeneratorConfig) -> Vec<Event> {
    Generator::new(config).expect("valid config").collect()
}

fn counts_by_type(events: &[Event]) -> [usize; 3] {
    let mut counts = [0; 3];
    for event in events {
        counts[event.event_type().code() as usize] += 1;
    }
    counts
}

#[test]
fn defaults_are_the_reference_configuration() {
    let defaults = GeneratorConfig::default();
    let expected = [
        ("person_proportion", defaults.person_proportion, 1),
        ("auction_proportion", defaults.auction_proportion, 3),
        ("bid_proportion", defaults.bid_proportion, 46),
        ("avg_person_byte_size", defaults.avg_person_byte_size, 200),
        ("avg_auction_byte_size", defaults.avg_auction_byte_size, 500),
        ("avg_bid_byte_size", defaults.avg_bid_byte_size, 100),
        ("hot_auction_ratio", defaults.hot_auction_ratio, 2),
        ("hot_sellers_ratio", defaults.hot_sellers_ratio, 4),
        ("hot_bidders_ratio", defaults.hot_bidders_ratio, 4),
        (
            "num_in_flight_auctions",
            defaults.num_in_flight_auctions,
            100,
        ),
        ("num_active_people", defaults.num_active_people, 1000),
        ("events_per_second", defaults.events_per_second, 10_000),
        (
            "out_of_order_group_size",
            defaults.out_of_order_group_size,
            1,
        ),
        ("person_id_lead", defaults.person_id_lead, 10),
        ("auction_id_lead", defaults.auction_id_lead, 10),
        ("first_event_id", defaults.first_event_id, 0),
    ];
    for (field, actual, reference) in expected {
        assert_eq!(actual, reference, "{field}");
    }
    assert_eq!(defaults.base_time_ms, BEAM_BASE_TIME_MS);
    assert_eq!((FIRST_PERSON_ID, FIRST_AUCTION_ID), (1000, 1000));
    assert_eq!((FIRST_CATEGORY_ID, CATEGORY_COUNT), (10, 5));
}

#[test]
fn every_50_events_are_1_person_3_auctions_46_bids() {
    // Aligned and unaligned starts: any 50 consecutive event ids hold the same mix.
    for first_event_id in [0, 1, 17, 49, 1_000_003] {
        let events = generate(GeneratorConfig {
            first_event_id,
            ..config(50_000)
        });
        assert_eq!(events.len(), 50_000);
        assert_eq!(
            counts_by_type(&events),
            [1_000, 3_000, 46_000],
            "first id {first_event_id}"
        );
        for window in events.chunks(50) {
            assert_eq!(
                counts_by_type(window),
                [1, 3, 46],
                "first id {first_event_id}"
            );
        }
    }
    // From event id 0, each cycle is person, auction × 3, bid × 46.
    let events = generate(config(100));
    let kinds: Vec<EventType> = events.iter().map(Event::event_type).collect();
    assert_eq!(kinds[0], EventType::Person);
    assert!(kinds[1..4].iter().all(|kind| *kind == EventType::Auction));
    assert!(kinds[4..50].iter().all(|kind| *kind == EventType::Bid));
    assert_eq!(kinds[50], EventType::Person);
}

#[test]
fn a_seed_determines_the_stream() {
    let first = generate(config(5_000));
    assert_eq!(first, generate(config(5_000)), "same seed, same events");

    let other_seed = generate(GeneratorConfig {
        seed: 43,
        ..config(5_000)
    });
    assert_ne!(first, other_seed, "different seed, different events");
    let differing = first
        .iter()
        .zip(&other_seed)
        .filter(|(a, b)| a != b)
        .count();
    assert!(differing > 4_900, "only {differing} of 5000 events differ");
    // Kinds, timestamps and the ids people and auctions get do not depend on the seed.
    for (a, b) in first.iter().zip(&other_seed) {
        assert_eq!(a.event_type(), b.event_type());
        assert_eq!(a.timestamp_ms(), b.timestamp_ms());
        match (a, b) {
            (Event::Person(a), Event::Person(b)) => assert_eq!(a.id, b.id),
            (Event::Auction(a), Event::Auction(b)) => assert_eq!(a.id, b.id),
            _ => {}
        }
    }
}

/// Walks the stream tracking the last person and auction generated, and checks every
/// reference against them: `person_slack` / `auction_slack` are how far past the last one a
/// reference may point.
fn check_references(events: &[Event], person_slack: u64, auction_slack: u64) {
    let mut last_person: Option<u64> = None;
    let mut last_auction: Option<u64> = None;
    for (number, event) in events.iter().enumerate() {
        match event {
            Event::Person(person) => {
                let expected = last_person.map_or(FIRST_PERSON_ID, |id| id + 1);
                assert_eq!(person.id, expected, "people are numbered in order");
                last_person = Some(person.id);
            }
            Event::Auction(auction) => {
                let expected = last_auction.map_or(FIRST_AUCTION_ID, |id| id + 1);
                assert_eq!(auction.id, expected, "auctions are numbered in order");
                last_auction = Some(auction.id);
                let last_person = last_person.expect("a person precedes every auction");
                assert!(
                    (FIRST_PERSON_ID..=last_person + person_slack).contains(&auction.seller),
                    "event {number}: seller {} with last person {last_person}",
                    auction.seller
                );
                assert!(
                    (FIRST_CATEGORY_ID..FIRST_CATEGORY_ID + CATEGORY_COUNT)
                        .contains(&auction.category)
                );
                assert!(auction.expires_ms > auction.date_time_ms);
                assert!(auction.reserve >= auction.initial_bid);
            }
            Event::Bid(bid) => {
                let last_person = last_person.expect("a person precedes every bid");
                let last_auction = last_auction.expect("an auction precedes every bid");
                assert!(
                    (FIRST_AUCTION_ID..=last_auction + auction_slack).contains(&bid.auction),
                    "event {number}: auction {} with last auction {last_auction}",
                    bid.auction
                );
                assert!(
                    (FIRST_PERSON_ID..=last_person + person_slack).contains(&bid.bidder),
                    "event {number}: bidder {} with last person {last_person}",
                    bid.bidder
                );
            }
        }
    }
}

#[test]
fn bids_and_auctions_refer_to_generated_people_and_auctions() {
    // The reference lets random references run up to 10 ids ahead of the last person or
    // auction ("events appear to have been swapped in time").
    let events = generate(config(100_000));
    check_references(&events, 10, 10);

    // Without the leads every random reference exists; the hot bidder, "the second person
    // of the latest batch of 100", can still be one past the last person (when the batch
    // has only its first person so far), as in the reference.
    let events = generate(GeneratorConfig {
        person_id_lead: 0,
        auction_id_lead: 0,
        ..config(100_000)
    });
    check_references(&events, 1, 0);
}

#[test]
fn most_bids_go_to_hot_auctions_and_bidders() {
    let events = generate(config(50_000));
    let bids: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::Bid(bid) => Some(bid),
            _ => None,
        })
        .collect();
    // Hot auction with probability 1/2, hot bidder 3/4, hot channel 1/2 (reference
    // defaults): the hot auction is a multiple of 100 above FIRST_AUCTION_ID, the hot
    // bidder one above a multiple of 100.
    let share = |predicate: &dyn Fn(&&sluice_stream::nexmark::Bid) -> bool| {
        bids.iter().filter(|bid| predicate(bid)).count() as f64 / bids.len() as f64
    };
    let hot_auctions = share(&|bid| (bid.auction - FIRST_AUCTION_ID).is_multiple_of(100));
    let hot_bidders = share(&|bid| (bid.bidder - FIRST_PERSON_ID) % 100 == 1);
    let hot_channels =
        share(&|bid| ["Google", "Facebook", "Baidu", "Apple"].contains(&bid.channel.as_str()));
    assert!((0.48..0.56).contains(&hot_auctions), "{hot_auctions}");
    assert!((0.73..0.79).contains(&hot_bidders), "{hot_bidders}");
    assert!((0.47..0.53).contains(&hot_channels), "{hot_channels}");
}

#[test]
fn extra_pads_events_to_the_average_sizes() {
    let events = generate(config(50_000));
    // The reference's idealized size: 8 bytes per number plus the strings' lengths.
    let mut sizes = [(0usize, 0usize); 3];
    for event in &events {
        let (kind, size) = match event {
            Event::Person(p) => (
                0,
                8 + p.name.len()
                    + p.email_address.len()
                    + p.credit_card.len()
                    + p.city.len()
                    + p.state.len()
                    + p.extra.len(),
            ),
            Event::Auction(a) => (
                1,
                48 + a.item_name.len() + a.description.len() + a.extra.len(),
            ),
            Event::Bid(b) => (2, 32 + b.extra.len()),
        };
        sizes[kind].0 += size;
        sizes[kind].1 += 1;
    }
    for ((total, count), average) in sizes.into_iter().zip([200.0, 500.0, 100.0]) {
        let mean = total as f64 / count as f64;
        assert!(
            (mean - average).abs() < average * 0.03,
            "mean {mean} for {average}"
        );
    }
}

#[test]
fn timestamps_follow_the_rate() {
    // (events per second, event number, expected offset from the base time in ms)
    let cases = [
        (10_000, vec![(0, 0), (9, 0), (10, 1), (49_999, 4_999)]),
        (1_000, vec![(0, 0), (1, 1), (12_345, 12_345)]),
        (3, vec![(0, 0), (1, 333), (2, 666), (3, 1_000), (6, 2_000)]),
        (1_000_000, vec![(999, 0), (1_000, 1), (49_999, 49)]),
    ];
    let base_time_ms = 1_700_000_000_000;
    for (events_per_second, expectations) in cases {
        let events = generate(GeneratorConfig {
            events_per_second,
            base_time_ms,
            ..config(50_000)
        });
        for (number, offset_ms) in expectations {
            assert_eq!(
                events[number].timestamp_ms(),
                base_time_ms + offset_ms,
                "event {number} at {events_per_second}/s"
            );
        }
        assert!(
            events
                .windows(2)
                .all(|pair| pair[0].timestamp_ms() <= pair[1].timestamp_ms()),
            "non-decreasing at {events_per_second}/s"
        );
        // Each whole second of event time holds exactly `events_per_second` events.
        let first_second: Vec<_> = events
            .iter()
            .take_while(|event| event.timestamp_ms() < base_time_ms + 1_000)
            .collect();
        let expected = (events_per_second as usize).min(events.len());
        assert_eq!(first_second.len(), expected, "{events_per_second}/s");
    }
}

#[test]
fn partitions_merged_round_robin_are_the_stream() {
    for max_events in [0, 1, 1_001, 10_000] {
        let unsplit = generate(config(max_events));
        for partition_count in [1u64, 2, 3, 7, 64] {
            let partitions = Generator::split(config(max_events), partition_count).expect("split");
            let mut outputs: Vec<Vec<Event>> = partitions
                .into_iter()
                .map(|partition| partition.collect())
                .collect();
            // Partition i yields event numbers i, i + n, ...
            for (index, output) in outputs.iter().enumerate() {
                let expected: Vec<&Event> = unsplit
                    .iter()
                    .skip(index)
                    .step_by(partition_count as usize)
                    .collect();
                assert_eq!(
                    output.iter().collect::<Vec<_>>(),
                    expected,
                    "partition {index}"
                );
            }
            let mut merged = Vec::with_capacity(unsplit.len());
            let mut cursors: Vec<_> = outputs.iter_mut().map(|output| output.drain(..)).collect();
            'round: loop {
                for cursor in cursors.iter_mut() {
                    match cursor.next() {
                        Some(event) => merged.push(event),
                        None => break 'round,
                    }
                }
            }
            assert_eq!(
                merged, unsplit,
                "{max_events} events in {partition_count} partitions"
            );
        }
    }
}

#[test]
fn a_resumed_generator_continues_where_it_stopped() {
    let mut partition = Generator::for_partition(config(2_000), 1, 3).expect("partition");
    let all: Vec<Event> = partition.clone().collect();
    let head: Vec<Event> = partition.by_ref().take(100).collect();
    assert_eq!(partition.events_emitted(), 100);
    let mut restored = Generator::for_partition(config(2_000), 1, 3).expect("partition");
    restored.resume_at(100);
    let tail: Vec<Event> = restored.collect();
    assert_eq!([head, tail].concat(), all);
    let generator = Generator::new(config(500)).expect("valid");
    assert_eq!(
        generator.clone().nth(321),
        generate(config(500)).into_iter().nth(321)
    );
    assert_eq!(generator.event_at(321), generator.clone().nth(321));
    assert_eq!(generator.event_at(500), None, "past max_events");
}

#[test]
fn watermark_never_passes_a_coming_event() {
    let mut generator = Generator::new(GeneratorConfig {
        out_of_order_group_size: 10,
        // At 10,000/s a group of 10 shares one millisecond; at 1,000/s the shuffle shows.
        events_per_second: 1_000,
        ..config(5_000)
    })
    .expect("valid");
    let mut out_of_order = 0;
    let mut latest_ms = i64::MIN;
    loop {
        let watermark_ms = generator.watermark_ms();
        let Some(event) = generator.next() else { break };
        assert!(event.timestamp_ms() >= watermark_ms);
        if event.timestamp_ms() < latest_ms {
            out_of_order += 1;
        }
        latest_ms = latest_ms.max(event.timestamp_ms());
    }
    assert!(out_of_order > 0, "groups of 10 are shuffled");
}

#[test]
fn events_round_trip_through_json() {
    for event in generate(config(2_000)) {
        let json = event.to_json();
        let parsed = Event::from_json(json.as_bytes()).expect("own JSON parses");
        assert_eq!(parsed, event, "{json}");
    }
}

#[test]
fn json_has_the_nexmark_row_shape() {
    let events = generate(config(5));
    let rows: Vec<serde_json::Value> = events
        .iter()
        .map(|event| serde_json::from_str(&event.to_json()).expect("valid JSON"))
        .collect();
    assert_eq!(rows[0]["event_type"], 0);
    assert_eq!(rows[0]["person"]["id"], 1000);
    assert_eq!(rows[0]["person"]["dateTime"], BEAM_BASE_TIME_MS);
    for field in [
        "name",
        "emailAddress",
        "creditCard",
        "city",
        "state",
        "extra",
    ] {
        assert!(rows[0]["person"][field].is_string(), "person.{field}");
    }
    assert_eq!(rows[1]["event_type"], 1);
    for field in [
        "id",
        "initialBid",
        "reserve",
        "dateTime",
        "expires",
        "seller",
        "category",
    ] {
        assert!(rows[1]["auction"][field].is_number(), "auction.{field}");
    }
    assert!(rows[1]["auction"]["itemName"].is_string());
    assert_eq!(rows[4]["event_type"], 2);
    for field in ["auction", "bidder", "price", "dateTime"] {
        assert!(rows[4]["bid"][field].is_number(), "bid.{field}");
    }
    for field in ["channel", "url", "extra"] {
        assert!(rows[4]["bid"][field].is_string(), "bid.{field}");
    }
    assert!(rows[4].get("person").is_none() && rows[4].get("auction").is_none());
}

#[test]
fn malformed_json_is_rejected() {
    let bid = generate(config(5)).pop().expect("five events");
    let Event::Bid(bid) = bid else {
        panic!("event 4 is a bid")
    };
    let bid_json = serde_json::to_string(&bid).expect("serializes");
    let cases = [
        format!(r#"{{"event_type":0,"bid":{bid_json}}}"#),
        format!(r#"{{"event_type":9,"bid":{bid_json}}}"#),
        format!(r#"{{"event_type":2,"bid":{bid_json},"auction":null,"surprise":1}}"#),
        r#"{"event_type":2}"#.to_owned(),
        "not json".to_owned(),
    ];
    for json in cases {
        assert!(Event::from_json(json.as_bytes()).is_err(), "{json}");
    }
    let explicit_nulls =
        format!(r#"{{"event_type":2,"person":null,"auction":null,"bid":{bid_json}}}"#);
    assert_eq!(
        Event::from_json(explicit_nulls.as_bytes()).expect("nulls are absent payloads"),
        Event::Bid(bid)
    );
}

#[test]
fn invalid_configs_are_rejected() {
    let cases: Vec<(&str, GeneratorConfig)> = vec![
        (
            "events_per_second",
            GeneratorConfig {
                events_per_second: 0,
                ..config(10)
            },
        ),
        (
            "person_proportion",
            GeneratorConfig {
                person_proportion: 0,
                ..config(10)
            },
        ),
        (
            "auction_proportion",
            GeneratorConfig {
                auction_proportion: 0,
                ..config(10)
            },
        ),
        (
            "hot_auction_ratio",
            GeneratorConfig {
                hot_auction_ratio: 0,
                ..config(10)
            },
        ),
        (
            "num_active_people",
            GeneratorConfig {
                num_active_people: 0,
                ..config(10)
            },
        ),
        (
            "out_of_order_group_size",
            GeneratorConfig {
                out_of_order_group_size: 0,
                ..config(10)
            },
        ),
        ("max_events", config(u64::MAX)),
        (
            "bid_proportion",
            GeneratorConfig {
                bid_proportion: u64::MAX,
                ..config(10)
            },
        ),
        (
            "base_time_ms",
            GeneratorConfig {
                base_time_ms: i64::MAX - 10,
                ..config(10)
            },
        ),
    ];
    for (field, invalid) in cases {
        match Generator::new(invalid) {
            Err(NexmarkError::InvalidConfig {
                field: reported, ..
            }) => {
                assert_eq!(reported, field)
            }
            other => panic!("{field}: expected InvalidConfig, got {other:?}"),
        }
    }
    assert!(matches!(
        Generator::for_partition(config(10), 3, 3),
        Err(NexmarkError::InvalidPartition { index: 3, count: 3 })
    ));
    assert!(Generator::split(config(10), 0).is_err());
    // No bids at all is a valid (if odd) mix.
    assert!(
        Generator::new(GeneratorConfig {
            bid_proportion: 0,
            ..config(10)
        })
        .is_ok()
    );
}
