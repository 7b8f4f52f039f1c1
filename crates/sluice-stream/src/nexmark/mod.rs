//! Nexmark: the online-auction benchmark's data model and event generator.
//!
//! What it is: the standard Nexmark stream of people, auctions and bids (`Event`), generated
//! deterministically from a seed and a `GeneratorConfig` by `Generator`, an iterator over
//! the whole stream or over one of `n` partitions for parallel sources, and the JSON form
//! in which events go into a Kafka topic, and (`queries`) the queries q0, q1, q2, q3, q4,
//! q5, q7, q8, q11 and q12 as DataStream jobs over a stream of `Event`s, with their
//! definitions and deviations. What it is not (yet): a DataStream source of its own (jobs
//! feed the generated events through a `CollectionSource` or a topic). It exists so that Sluice's queries
//! and the Flink baseline of `bench/nexmark` consume the same model (issue 10).
//!
//! # Follows the reference exactly
//! The reference is the Nexmark generator of Apache Beam and of the Flink Nexmark project
//! (`NexmarkGenerator`, `GeneratorConfig`, `NexmarkConfiguration`, the `*Generator` model
//! classes), read, not copied:
//! - the fields of `Person`, `Auction` and `Bid` (with Flink Nexmark's `channel` and `url`);
//! - the kind of an event from its id: of every 50 consecutive ids, 1 person, 3 auctions,
//!   46 bids, in that order (`person_proportion`, `auction_proportion`, `bid_proportion`);
//! - id assignment: person and auction ids counted from `FIRST_PERSON_ID` = 1000 and
//!   `FIRST_AUCTION_ID` = 1000 by the `lastBase0*Id` arithmetic; a bid is for the hot
//!   auction (first of the latest batch of 100) with probability 1 − 1/`hot_auction_ratio`,
//!   else for a random one of the last `num_in_flight_auctions` plus `auction_id_lead`;
//!   bidders and sellers likewise (hot bidder = second of the latest 100 people, hot seller
//!   = first; random ones among the last `num_active_people` plus `person_id_lead`). The
//!   leads mean a reference may point up to 10 ids past the last generated person or
//!   auction (and a hot bidder one past it), as the reference intends: "newPerson and
//!   newAuction events appear to have been swapped in time". Set the leads to 0 for a stream
//!   whose random references all exist;
//! - categories `FIRST_CATEGORY_ID` = 10 .. 14; the states, cities and names; email,
//!   credit-card and string shapes; log-uniform prices from $1 to $1M in cents; reserve =
//!   initial bid + a price; auction length uniform in `[1, 2 × horizon]` where the horizon
//!   is the time until `num_in_flight_auctions` more auctions; hot channels (Google,
//!   Facebook, Baidu, Apple) for half the bids, else `channel-0` .. `channel-9999`, URLs
//!   `https://www.nexmark.com/x/y/z/item.htm?query=1`, with the reference's
//!   `&channel_id=` suffix on 9 in 10 channels;
//! - `extra` padding to the average sizes 200 / 500 / 100 bytes, uniform within ±20%;
//! - defaults of `NexmarkConfiguration` (ratios 2 / 4 / 4, 100 in-flight auctions, 1000
//!   active people, 10,000 events/s, out-of-order group size 1 with the reference's
//!   shuffle for larger groups).
//!
//! # Differs, and why
//! - Randomness: SplitMix64 (`random`) seeded with `(seed, event id)`, instead of Beam's
//!   `new Random(eventId)` or Flink Nexmark's unseeded `Random` (not reproducible at all).
//!   Every event is a pure function of seed, config and event number, so the same seed gives
//!   the same stream and different seeds different strings, prices and random references;
//!   but no seed reproduces the Java generators' values. What does not depend on
//!   randomness matches the reference for the same config: each event's kind, timestamp,
//!   person or auction id, and the hot auction, seller and bidder ids.
//!   Prices use `f64::powf`, so bit-identical output across platforms assumes the same libm.
//! - Channel URLs: drawn once per channel from a seeded stream (the reference caches them
//!   on first use from an unseeded `Random`).
//! - Timestamps: `base_time_ms + floor(n × 1000 / events_per_second)` in exact integer
//!   arithmetic; the reference multiplies by a `double` delay in microseconds and can land a
//!   millisecond lower at exact multiples (e.g. 3 events/s). The default base time is
//!   Beam's fixed 2015-07-15T00:00:00Z; Flink Nexmark uses the wall clock at start. There
//!   is no wall-clock emission time or rate limiting here: a source that wants real-time
//!   pacing sleeps until `timestamp_ms - base_time_ms` has passed.
//! - Splitting: partition `i` of `n` yields global event numbers `i, i + n, ...`, with the
//!   timestamps of the unsplit stream, so the merged partitions are exactly the unsplit
//!   stream. The reference instead splits the id space into `n` contiguous ranges, each
//!   on its own timeline at `1/n` of the rate (`numEventGenerators`), so its partitions
//!   overlap in time and its ids depend on `n`; that knob does not exist here.
//! - `max_events` is required and bounded (`EVENTS_LIMIT`); the reference's 0 meant
//!   "as many as fit". The default is Flink Nexmark's benchmark size, 100 million.
//! - Random letters are always `a`–`z`: the reference's `nextExactString` applies `%` to a
//!   possibly negative Java `int` and can emit characters just before `a`.
//! - One version of Flink Nexmark's `BidGenerator` adds `FIRST_PERSON_ID` to the bidder
//!   twice (bidders from 2000); we add it once, as Beam does.
//! - The reference's `extendedBidMode`, side inputs, rate shapes (`nextEventRate`,
//!   `rateShape`) and occasional delays (`probDelayedEvent`) are not implemented: the
//!   issue's queries use none of them.
//! - JSON: Flink Nexmark's row `{"event_type", "person", "auction", "bid"}` with camelCase
//!   fields, the absent payloads omitted, and `dateTime` / `expires` as epoch milliseconds.
//!
//! # Cost
//! Per event: one SplitMix64 seeding (three finalizer rounds), then per bid about 8 draws
//! plus one per 13 letters of `extra` (~68 letters: 6 draws), and 3 heap allocations
//! (channel, URL and extra strings); people and auctions about 4–10 allocations and up to
//! a few hundred draws (an auction's description and ~390 letters of
//! `extra`). Channel URLs are built once per stream (10,000 strings, shared by its
//! partitions through an `Arc`). An informal release-build run on this 2-core machine
//! under load (load average ~4) generated ~2 M events/s on one core, ~1 M/s including
//! `to_json`: a few times the per-core rate the 3× Flink goal needs, so the
//! generator takes a noticeable but not dominant share of a query's budget.
//! `bench/nexmark` is where the measured figure belongs.

mod config;
mod error;
mod generator;
mod model;
pub mod queries;
mod random;

pub use config::{
    BEAM_BASE_TIME_MS, CATEGORY_COUNT, DEFAULT_MAX_EVENTS, EVENTS_LIMIT, FIELD_LIMIT,
    FIRST_AUCTION_ID, FIRST_CATEGORY_ID, FIRST_PERSON_ID, GeneratorConfig,
};
pub use error::NexmarkError;
pub use generator::Generator;
pub use model::{Auction, Bid, Event, EventType, Person};
