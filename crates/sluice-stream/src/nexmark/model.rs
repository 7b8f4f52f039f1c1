//! The Nexmark data model: people, the auctions they open and the bids they place, and the
//! JSON form in which they are written to a topic.
//!
//! Field names and meanings follow the reference (`com.github.nexmark.flink.model`, which
//! extends Beam's with a bid's `channel` and `url`). The JSON form is the row of Flink
//! Nexmark's `datagen` table: `{"event_type": 0|1|2, "person": {..}, "auction": {..},
//! "bid": {..}}` with exactly one payload present and the reference's camelCase field names
//! (`emailAddress`, `creditCard`, `dateTime`, `itemName`, `initialBid`). Timestamps are epoch
//! milliseconds as JSON integers (Flink's SQL row renders `TIMESTAMP(3)` as text instead).

use serde::{Deserialize, Serialize};

use super::error::NexmarkError;

/// A person who sells or bids (reference: `Person`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Person {
    /// Primary key, from `FIRST_PERSON_ID` up, one per person event.
    pub id: u64,
    pub name: String,
    pub email_address: String,
    pub credit_card: String,
    pub city: String,
    pub state: String,
    /// When the person registered: the event time.
    #[serde(rename = "dateTime")]
    pub date_time_ms: i64,
    /// Padding that brings the event to its configured average size.
    pub extra: String,
}

/// An item put up for auction by a person (reference: `Auction`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Auction {
    /// Primary key, from `FIRST_AUCTION_ID` up, one per auction event.
    pub id: u64,
    pub item_name: String,
    pub description: String,
    /// Opening price, in cents.
    pub initial_bid: u64,
    /// Reserve price, in cents; never below `initial_bid`.
    pub reserve: u64,
    /// When the auction opened: the event time.
    #[serde(rename = "dateTime")]
    pub date_time_ms: i64,
    /// When the auction closes; bids at or after it are ignored by the queries.
    #[serde(rename = "expires")]
    pub expires_ms: i64,
    /// Foreign key to `Person::id`.
    pub seller: u64,
    /// From `FIRST_CATEGORY_ID`, one of `CATEGORY_COUNT` categories.
    pub category: u64,
    pub extra: String,
}

/// A bid on an auction (reference: `Bid`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Bid {
    /// Foreign key to `Auction::id`.
    pub auction: u64,
    /// Foreign key to `Person::id`.
    pub bidder: u64,
    /// In cents.
    pub price: u64,
    /// The channel the bid came through: one of a few hot channels, or `channel-N`.
    pub channel: String,
    pub url: String,
    /// When the bid was placed: the event time.
    #[serde(rename = "dateTime")]
    pub date_time_ms: i64,
    pub extra: String,
}

/// The reference's `Event.Type` codes, used as `event_type` in the JSON form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Person = 0,
    Auction = 1,
    Bid = 2,
}

impl EventType {
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// One event of the stream.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "EventRecord")]
pub enum Event {
    Person(Person),
    Auction(Auction),
    Bid(Bid),
}

impl Event {
    /// The event time: the payload's `dateTime`.
    pub fn timestamp_ms(&self) -> i64 {
        match self {
            Event::Person(person) => person.date_time_ms,
            Event::Auction(auction) => auction.date_time_ms,
            Event::Bid(bid) => bid.date_time_ms,
        }
    }

    pub fn event_type(&self) -> EventType {
        match self {
            Event::Person(_) => EventType::Person,
            Event::Auction(_) => EventType::Auction,
            Event::Bid(_) => EventType::Bid,
        }
    }

    /// The JSON form, as written to a topic.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("events hold only strings and integers")
    }

    /// Parses the JSON form; rejects an unknown `event_type` or a payload that does not
    /// match it, since a query would otherwise silently drop or misread the event.
    pub fn from_json(bytes: &[u8]) -> Result<Event, NexmarkError> {
        Ok(serde_json::from_slice(bytes)?)
    }
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Borrowing the payload avoids the clone that `#[serde(into = ..)]` would make of
        // every event on the hot serialization path.
        let (person, auction, bid) = match self {
            Event::Person(person) => (Some(person), None, None),
            Event::Auction(auction) => (None, Some(auction), None),
            Event::Bid(bid) => (None, None, Some(bid)),
        };
        EventRecordRef {
            event_type: self.event_type().code(),
            person,
            auction,
            bid,
        }
        .serialize(serializer)
    }
}

#[derive(Serialize)]
struct EventRecordRef<'a> {
    event_type: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    person: Option<&'a Person>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auction: Option<&'a Auction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bid: Option<&'a Bid>,
}

/// The JSON row as read: the payloads the type code does not name may be absent or null.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventRecord {
    event_type: u8,
    #[serde(default)]
    person: Option<Person>,
    #[serde(default)]
    auction: Option<Auction>,
    #[serde(default)]
    bid: Option<Bid>,
}

impl TryFrom<EventRecord> for Event {
    type Error = NexmarkError;

    fn try_from(record: EventRecord) -> Result<Self, Self::Error> {
        let type_code = record.event_type;
        match (type_code, record.person, record.auction, record.bid) {
            (0, Some(person), None, None) => Ok(Event::Person(person)),
            (1, None, Some(auction), None) => Ok(Event::Auction(auction)),
            (2, None, None, Some(bid)) => Ok(Event::Bid(bid)),
            (0..=2, ..) => Err(NexmarkError::MalformedEvent(format!(
                "event_type {type_code} needs exactly its own payload"
            ))),
            _ => Err(NexmarkError::MalformedEvent(format!(
                "unknown event_type {type_code}"
            ))),
        }
    }
}
