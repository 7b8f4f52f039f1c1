//! The message browser: a topic's records from the earliest, the latest, an offset or a
//! point in time, from one partition or all; filtered by key, value and header substrings
//! and by a small expression language ([`expr`]); decoded as JSON, text or hex, or as
//! Avro, Protobuf and JSON Schema through the schema registry; followed live; and a form
//! that produces a record (key, value, headers; text, JSON or Avro).
//!
//! `GET /api/topics/{topic}/messages` answers NDJSON: one `{"record": ...}` line per
//! matching record, `{"error": ...}` lines for what went wrong on the way, and a last
//! `{"end": {"positions": ...}}` with the next offset of every partition read, from which
//! the page continues ("More") or tails ("Live"). A browse never loads a whole partition:
//! it reads by assignment (no group, no commits) in fetches of at most 1 MiB, up to each
//! partition's high watermark of when it started, and stops at `limit` matches, after
//! [`SCAN_BOUND`] records scanned, after [`BROWSE_TIME`], or when the client goes away.
//!
//! Decoding (`decode=auto`): a value that starts with Confluent's wire format (magic byte
//! 0 and a 4-byte schema id) is decoded with that schema from the registry; else valid
//! UTF-8 JSON is JSON; else printable UTF-8 is text; else hex. A value that does not decode
//! as asked is shown in hex with the reason. Keys are decoded the same way, except that a
//! value format (JSON, Avro, ...) asked for is not forced on them: they are detected.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use sluice_client::consumer::{AutoOffsetReset, Consumer, ConsumerConfig, ConsumerRecord};
use sluice_client::producer::{Producer, ProducerConfig, ProducerError, ProducerRecord};
use sluice_client::{ListOffsetsResultInfo, OffsetSpec, TopicDescription, TopicPartition};
use sluice_connect::converters::ProtobufData;
use sluice_protocol::{Header, TimestampType};
use sluice_registry::client::{SchemaRegistryClient, SchemaType};
use sluice_registry::serde::avro::{AvroDeserializer, ParsedAvroSchema};
use sluice_registry::serde::json::JsonDeserializer;
use sluice_registry::serde::protobuf::{ProtobufDeserializer, message_at};
use sluice_registry::serde::wire::{read_header, read_message_indexes, write_header};
use tokio::sync::mpsc;

use self::expr::Expr;
use super::html::{self, Nav, OnSuccess, esc, seg};
use super::state::{ApiError, ApiResult, Console};

/// Matches a browse returns when the request names no `limit`.
const DEFAULT_LIMIT: usize = 100;
/// The most matches one browse returns.
const MAX_LIMIT: usize = 1000;
/// The most records one browse reads (matching or not) before it stops and reports
/// where it got to.
const SCAN_BOUND: u64 = 10_000;
/// The most one fetch brings back (per partition and per request).
const FETCH_BYTES: i32 = 1024 * 1024;
/// How long one browse may take before it stops and reports where it got to.
const BROWSE_TIME: Duration = Duration::from_secs(60);
/// How long a browse waits for records it knows are there before it gives up.
const IDLE_TIME: Duration = Duration::from_secs(10);
/// The most of a key or value shown as text (hex shows half as many bytes).
const SHOW_BYTES: usize = 64 * 1024;
/// Keys and values larger than this are shown (truncated), not decoded.
const DECODE_BYTES: usize = 1024 * 1024;
/// Lines buffered between the reader and the connection (back-pressure beyond that).
const LINES_BUFFERED: usize = 64;
/// The largest produce request the console takes: bigger than any broker's default
/// `message.max.bytes`, so that the broker's own refusal is what the page shows.
const PRODUCE_BODY_BYTES: usize = 32 * 1024 * 1024;

pub fn routes() -> Router<Arc<Console>> {
    Router::new()
        .route("/topics/{topic}/messages", get(page))
        .route(
            "/api/topics/{topic}/messages",
            get(browse)
                .post(produce)
                .layer(DefaultBodyLimit::max(PRODUCE_BODY_BYTES)),
        )
}

// The browse request.

/// The query of a browse, as sent (every parameter is checked in [`parse_browse`], so
/// that a bad one is a 400 naming it).
#[derive(Deserialize, Default)]
struct BrowseQuery {
    partition: Option<String>,
    from: Option<String>,
    offset: Option<String>,
    timestamp: Option<String>,
    limit: Option<String>,
    key: Option<String>,
    value: Option<String>,
    header: Option<String>,
    expr: Option<String>,
    decode: Option<String>,
    positions: Option<String>,
}

/// Where a browse starts in each partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Earliest,
    /// The last `limit` records of each partition.
    Latest,
    Offset(i64),
    /// The first record at or after this time (ms).
    Timestamp(i64),
}

/// A checked browse request.
#[derive(Debug)]
struct Browse {
    partition: Option<i32>,
    start: Start,
    limit: usize,
    filters: Filters,
    decode: Decode,
    /// Where to continue, by partition (overrides `start` for the partitions it names).
    positions: BTreeMap<i32, i64>,
}

/// The filters a record must pass (all of them).
#[derive(Debug, Default)]
struct Filters {
    key: Option<String>,
    value: Option<String>,
    header: Option<String>,
    expr: Option<Expr>,
}

fn non_empty(text: Option<String>) -> Option<String> {
    text.filter(|text| !text.trim().is_empty())
}

fn parse_browse(query: BrowseQuery) -> Result<Browse, ApiError> {
    let partition = match non_empty(query.partition).as_deref().map(str::trim) {
        None | Some("all") => None,
        Some(text) => Some(
            text.parse::<i32>()
                .ok()
                .filter(|p| *p >= 0)
                .ok_or_else(|| {
                    ApiError::field(
                        "partition",
                        format!("'{text}' is not a partition number (or 'all')"),
                    )
                })?,
        ),
    };
    let start = match non_empty(query.from).as_deref().map(str::trim) {
        None | Some("earliest") => Start::Earliest,
        Some("latest") => Start::Latest,
        Some("offset") => {
            let text = non_empty(query.offset)
                .ok_or_else(|| ApiError::field("offset", "give the offset to start from"))?;
            let text = text.trim();
            Start::Offset(
                text.parse::<i64>()
                    .ok()
                    .filter(|o| *o >= 0)
                    .ok_or_else(|| {
                        ApiError::field("offset", format!("'{text}' is not an offset (0 or more)"))
                    })?,
            )
        }
        Some("timestamp") => {
            let text = non_empty(query.timestamp).ok_or_else(|| {
                ApiError::field(
                    "timestamp",
                    "give the time to start from (2026-12-07T15:00:00Z, or ms since the epoch)",
                )
            })?;
            Start::Timestamp(
                parse_time(&text).map_err(|reason| ApiError::field("timestamp", reason))?,
            )
        }
        Some(other) => {
            return Err(ApiError::field(
                "from",
                format!("'{other}' is not earliest, latest, offset or timestamp"),
            ));
        }
    };
    let limit = match non_empty(query.limit) {
        None => DEFAULT_LIMIT,
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::field(
                    "limit",
                    format!("'{}' is not a number from 1 to {MAX_LIMIT}", text.trim()),
                )
            })?,
    };
    let decode = match non_empty(query.decode) {
        None => Decode::Auto,
        Some(text) => Decode::parse(text.trim()).ok_or_else(|| {
            ApiError::field(
                "decode",
                format!(
                    "'{}' is not one of {}",
                    text.trim(),
                    Decode::ALL.map(|d| d.name()).join(", ")
                ),
            )
        })?,
    };
    let expr = match non_empty(query.expr) {
        None => None,
        Some(text) => Some(
            Expr::parse(&text)
                .map_err(|error| ApiError::field("expr", format!("expression error {error}")))?,
        ),
    };
    let positions = match non_empty(query.positions) {
        None => BTreeMap::new(),
        Some(text) => {
            parse_positions(&text).map_err(|reason| ApiError::field("positions", reason))?
        }
    };
    Ok(Browse {
        partition,
        start,
        limit,
        filters: Filters {
            key: query.key.filter(|s| !s.is_empty()),
            value: query.value.filter(|s| !s.is_empty()),
            header: query.header.filter(|s| !s.is_empty()),
            expr,
        },
        decode,
        positions,
    })
}

/// `0:12,1:40`: the next offset of each partition (what `end.positions` said).
fn parse_positions(text: &str) -> Result<BTreeMap<i32, i64>, String> {
    let mut positions = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let parsed = item.split_once(':').and_then(|(p, o)| {
            let partition = p.trim().parse::<i32>().ok().filter(|p| *p >= 0)?;
            let offset = o.trim().parse::<i64>().ok().filter(|o| *o >= 0)?;
            Some((partition, offset))
        });
        let (partition, offset) =
            parsed.ok_or_else(|| format!("'{item}' is not partition:offset"))?;
        positions.insert(partition, offset);
    }
    Ok(positions)
}

/// A time as people write it in UTC, `2026-12-07T15:00:00Z` (seconds, fraction and zone
/// optional; `+01:00` offsets and a space for the `T` accepted), or ms since the epoch.
fn parse_time(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "'{text}' is not a time: write 2026-12-07T15:00:00Z (UTC) or milliseconds since \
             the epoch"
        )
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<i64>().map_err(|_| bad());
    }
    let b = text.as_bytes();
    let digits = |from: usize, count: usize| -> Option<i64> {
        let slice = b.get(from..from + count)?;
        if !slice.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(slice).ok()?.parse().ok()
    };
    let (year, month, day) = match (digits(0, 4), b.get(4), digits(5, 2), b.get(7), digits(8, 2)) {
        (Some(y), Some(b'-'), Some(m), Some(b'-'), Some(d)) => (y, m, d),
        _ => return Err(bad()),
    };
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => return Err(format!("'{text}': there is no month {month}")),
    };
    if !(1..=days_in_month).contains(&day) {
        return Err(format!("'{text}': month {month} has no day {day}"));
    }
    let mut at = 10;
    let (mut hour, mut minute, mut second, mut millis) = (0, 0, 0, 0);
    if matches!(b.get(at), Some(b'T' | b't' | b' ')) {
        match (digits(at + 1, 2), b.get(at + 3), digits(at + 4, 2)) {
            (Some(h), Some(b':'), Some(m)) => (hour, minute) = (h, m),
            _ => return Err(bad()),
        }
        at += 6;
        if b.get(at) == Some(&b':') {
            second = digits(at + 1, 2).ok_or_else(bad)?;
            at += 3;
            if b.get(at) == Some(&b'.') {
                let fraction: Vec<u8> = b[at + 1..]
                    .iter()
                    .copied()
                    .take_while(u8::is_ascii_digit)
                    .collect();
                if fraction.is_empty() {
                    return Err(bad());
                }
                for (i, digit) in fraction.iter().take(3).enumerate() {
                    millis += i64::from(digit - b'0') * [100, 10, 1][i];
                }
                at += 1 + fraction.len();
            }
        }
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(format!("'{text}': the time of day is out of range"));
    }
    let offset_minutes = match b.get(at) {
        None | Some(b'Z' | b'z') if b.len() <= at + 1 => 0,
        Some(sign @ (b'+' | b'-')) => {
            let hours = digits(at + 1, 2).ok_or_else(bad)?;
            let minutes = match b.get(at + 3) {
                Some(b':') => digits(at + 4, 2),
                Some(_) => digits(at + 3, 2),
                None => Some(0),
            }
            .ok_or_else(bad)?;
            let rest = match b.get(at + 3) {
                Some(b':') => at + 6,
                Some(_) => at + 5,
                None => at + 3,
            };
            if b.len() != rest || hours > 23 || minutes > 59 {
                return Err(bad());
            }
            let total = hours * 60 + minutes;
            if *sign == b'+' { total } else { -total }
        }
        _ => return Err(bad()),
    };
    let days = crate::group::days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Ok(seconds * 1000 + millis)
}

// Decoding.

/// How keys and values are decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decode {
    Auto,
    Json,
    Text,
    Hex,
    Avro,
    Protobuf,
    JsonSchema,
}

impl Decode {
    const ALL: [Decode; 7] = [
        Decode::Auto,
        Decode::Json,
        Decode::Text,
        Decode::Hex,
        Decode::Avro,
        Decode::Protobuf,
        Decode::JsonSchema,
    ];

    fn name(self) -> &'static str {
        match self {
            Decode::Auto => "auto",
            Decode::Json => "json",
            Decode::Text => "text",
            Decode::Hex => "hex",
            Decode::Avro => "avro",
            Decode::Protobuf => "protobuf",
            Decode::JsonSchema => "json-schema",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Decode::Auto => "Auto (registry, JSON, text or hex)",
            Decode::Json => "JSON",
            Decode::Text => "Text (UTF-8)",
            Decode::Hex => "Hex",
            Decode::Avro => "Avro (registry)",
            Decode::Protobuf => "Protobuf (registry)",
            Decode::JsonSchema => "JSON Schema (registry)",
        }
    }

    fn parse(name: &str) -> Option<Decode> {
        Decode::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// A key or value as the page shows it.
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    /// `json`, `text`, `hex`, `avro`, `protobuf`, `json-schema`, or `null`.
    format: &'static str,
    /// The decoded JSON for structured formats, a string for text and hex, null for null.
    value: Value,
    /// What substring filters and `key`/`value` in expressions read: the text, the JSON's
    /// text, the hex.
    text: Option<String>,
    schema_id: Option<i32>,
    /// Why it is not shown as asked (it is shown in hex then).
    error: Option<String>,
    /// Only the first [`SHOW_BYTES`] are shown.
    truncated: bool,
}

impl Shown {
    fn null() -> Shown {
        Shown {
            format: "null",
            value: Value::Null,
            text: None,
            schema_id: None,
            error: None,
            truncated: false,
        }
    }

    fn text(text: &str) -> Shown {
        let shown = truncate_chars(text, SHOW_BYTES);
        Shown {
            format: "text",
            value: Value::String(shown.to_string()),
            text: Some(text.to_string()),
            schema_id: None,
            error: None,
            truncated: shown.len() < text.len(),
        }
    }

    fn hex(bytes: &[u8], error: Option<String>) -> Shown {
        let shown = &bytes[..bytes.len().min(SHOW_BYTES / 2)];
        let hex = hex(shown);
        Shown {
            format: "hex",
            value: Value::String(hex.clone()),
            text: Some(hex),
            schema_id: None,
            error,
            truncated: shown.len() < bytes.len(),
        }
    }

    /// Decoded JSON; `raw` is the text it was parsed from, if it was text.
    fn json(
        value: Value,
        format: &'static str,
        schema_id: Option<i32>,
        raw: Option<&str>,
    ) -> Shown {
        let text = match raw {
            Some(raw) => raw.to_string(),
            None => value.to_string(),
        };
        Shown {
            format,
            value,
            text: Some(text),
            schema_id,
            error: None,
            truncated: false,
        }
    }
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character.
fn truncate_chars(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// What bytes look like, for `decode=auto`.
#[derive(Debug, PartialEq)]
enum Sniffed<'a> {
    /// Confluent's wire format: magic byte 0 and this schema id.
    Framed(i32),
    Json(Value, &'a str),
    Text(&'a str),
    Binary,
}

fn sniff(bytes: &[u8]) -> Sniffed<'_> {
    if let Ok((id, _)) = read_header(bytes) {
        return Sniffed::Framed(id);
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Sniffed::Binary;
    };
    if !text.trim().is_empty()
        && let Ok(value) = serde_json::from_str::<Value>(text)
    {
        return Sniffed::Json(value, text);
    }
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Sniffed::Binary;
    }
    Sniffed::Text(text)
}

/// Decodes keys and values for one browse; schemas come from the registry once each.
struct Decoder {
    mode: Decode,
    registry: Option<Registry>,
}

/// The registry and a deserializer per format (each caches the schemas it parsed).
struct Registry {
    client: SchemaRegistryClient,
    avro: AvroDeserializer,
    protobuf: ProtobufDeserializer,
    json: JsonDeserializer,
    protobuf_data: ProtobufData,
    /// Schema ids the registry could not give, and why (asked once per browse).
    failed: HashMap<i32, String>,
}

impl Decoder {
    fn new(mode: Decode, client: Option<SchemaRegistryClient>) -> Decoder {
        Decoder {
            mode,
            registry: client.map(|client| Registry {
                avro: AvroDeserializer::new(client.clone()),
                protobuf: ProtobufDeserializer::new(client.clone()),
                json: JsonDeserializer::new(client.clone()),
                protobuf_data: ProtobufData::default(),
                failed: HashMap::new(),
                client,
            }),
        }
    }

    /// A key, as `decode` says when it is text or hex; otherwise detected (a key is
    /// seldom of the value's format: a text key beside an Avro value).
    async fn decode_key(&mut self, bytes: Option<&[u8]>) -> Shown {
        let mode = match self.mode {
            Decode::Text | Decode::Hex => self.mode,
            _ => Decode::Auto,
        };
        self.decode_as(bytes, mode).await
    }

    /// A value, as `decode` says.
    async fn decode(&mut self, bytes: Option<&[u8]>) -> Shown {
        self.decode_as(bytes, self.mode).await
    }

    async fn decode_as(&mut self, bytes: Option<&[u8]>, mode: Decode) -> Shown {
        let Some(bytes) = bytes else {
            return Shown::null();
        };
        if bytes.len() > DECODE_BYTES && mode != Decode::Hex {
            let reason = format!(
                "{} bytes: too large to decode here; the first {} KiB are shown",
                bytes.len(),
                SHOW_BYTES / 1024
            );
            let head = &bytes[..SHOW_BYTES];
            let text = match std::str::from_utf8(head) {
                Ok(text) => Some(text),
                // Cut inside a character: the text up to it.
                Err(e) if e.error_len().is_none() => {
                    std::str::from_utf8(&head[..e.valid_up_to()]).ok()
                }
                Err(_) => None,
            };
            let mut shown = match text {
                Some(text) => Shown::text(text),
                None => Shown::hex(bytes, None),
            };
            shown.error = Some(reason);
            shown.truncated = true;
            return shown;
        }
        match mode {
            Decode::Hex => Shown::hex(bytes, None),
            Decode::Text => match std::str::from_utf8(bytes) {
                Ok(text) => Shown::text(text),
                Err(error) => Shown::hex(bytes, Some(format!("not UTF-8 text: {error}"))),
            },
            Decode::Json => match serde_json::from_slice::<Value>(bytes) {
                Ok(value) => Shown::json(value, "json", None, std::str::from_utf8(bytes).ok()),
                Err(error) => Shown::hex(bytes, Some(format!("not JSON: {error}"))),
            },
            Decode::Avro => self.registry_decode(bytes, Some(SchemaType::Avro)).await,
            Decode::Protobuf => {
                self.registry_decode(bytes, Some(SchemaType::Protobuf))
                    .await
            }
            Decode::JsonSchema => self.registry_decode(bytes, Some(SchemaType::Json)).await,
            Decode::Auto => match sniff(bytes) {
                Sniffed::Framed(_) => self.registry_decode(bytes, None).await,
                Sniffed::Json(value, raw) => Shown::json(value, "json", None, Some(raw)),
                Sniffed::Text(text) => Shown::text(text),
                Sniffed::Binary => Shown::hex(bytes, None),
            },
        }
    }

    /// A framed value, with the schema its id names (of `expected` type when given).
    async fn registry_decode(&mut self, bytes: &[u8], expected: Option<SchemaType>) -> Shown {
        match self.try_registry_decode(bytes, expected).await {
            Ok(shown) => shown,
            Err(reason) => Shown::hex(bytes, Some(reason)),
        }
    }

    async fn try_registry_decode(
        &mut self,
        bytes: &[u8],
        expected: Option<SchemaType>,
    ) -> Result<Shown, String> {
        let (id, _) =
            read_header(bytes).map_err(|e| format!("not Confluent's wire format: {e}"))?;
        let Some(registry) = &mut self.registry else {
            return Err(format!(
                "Confluent's wire format with schema id {id}, but the console has no schema \
                 registry (--registry-url)"
            ));
        };
        if let Some(reason) = registry.failed.get(&id) {
            return Err(reason.clone());
        }
        let kind = match registry.client.get_schema_by_id(id).await {
            Ok(schema) => schema.schema_type,
            Err(error) => {
                let reason = format!("schema id {id}: {error}");
                registry.failed.insert(id, reason.clone());
                return Err(reason);
            }
        };
        if let Some(expected) = expected
            && expected != kind
        {
            return Err(format!(
                "schema id {id} is {}, not {}",
                kind.name(),
                expected.name()
            ));
        }
        let decoded = match kind {
            SchemaType::Avro => registry
                .avro
                .deserialize_json(bytes)
                .await
                .map(|value| ("avro", value))
                .map_err(|e| e.to_string()),
            SchemaType::Json => registry
                .json
                .deserialize(bytes)
                .await
                .map(|value| ("json-schema", value))
                .map_err(|e| e.to_string()),
            SchemaType::Protobuf => protobuf_json(registry, id, bytes)
                .await
                .map(|value| ("protobuf", value)),
        };
        let (format, value) =
            decoded.map_err(|reason| format!("schema id {id} ({}): {reason}", kind.name()))?;
        Ok(Shown::json(value, format, Some(id), None))
    }
}

/// A framed Protobuf message as JSON (through Connect's data, as Confluent's
/// `ProtobufConverter` reads it).
async fn protobuf_json(registry: &Registry, id: i32, bytes: &[u8]) -> Result<Value, String> {
    let (_, rest) = read_header(bytes).map_err(|e| e.to_string())?;
    let (indexes, _) = read_message_indexes(rest).map_err(|e| e.to_string())?;
    let file = registry
        .protobuf
        .file(id)
        .await
        .map_err(|e| e.to_string())?;
    let descriptor = message_at(&file, &indexes)
        .ok_or_else(|| format!("the schema has no message at indexes {indexes:?}"))?;
    let message = registry
        .protobuf
        .deserialize(bytes)
        .await
        .map_err(|e| e.to_string())?;
    let data = &registry.protobuf_data;
    let schema = data
        .to_connect_schema(&descriptor, None)
        .map_err(|e| e.to_string())?;
    let value = data
        .to_connect_data(&schema, &message)
        .map_err(|e| e.to_string())?;
    Ok(connect_json(&value))
}

/// Connect data (what a Protobuf message decodes to) as JSON: structs as objects, bytes
/// as base64, maps with string keys as objects (other maps as `[key, value]` pairs).
fn connect_json(value: &sluice_connect::data::Value) -> Value {
    use base64::Engine as _;
    use sluice_connect::data::Value as Data;
    match value {
        Data::Null => Value::Null,
        Data::Int8(v) => json!(v),
        Data::Int16(v) => json!(v),
        Data::Int32(v) => json!(v),
        Data::Int64(v) => json!(v),
        Data::Float32(v) => json!(v),
        Data::Float64(v) => json!(v),
        Data::Boolean(v) => json!(v),
        Data::String(v) => json!(v),
        Data::Bytes(v) => json!(base64::engine::general_purpose::STANDARD.encode(v)),
        Data::Array(items) => Value::Array(items.iter().map(connect_json).collect()),
        Data::Map(entries) => {
            if entries.iter().all(|(k, _)| matches!(k, Data::String(_))) {
                Value::Object(
                    entries
                        .iter()
                        .filter_map(|(k, v)| match k {
                            Data::String(k) => Some((k.clone(), connect_json(v))),
                            _ => None,
                        })
                        .collect(),
                )
            } else {
                Value::Array(
                    entries
                        .iter()
                        .map(|(k, v)| json!([connect_json(k), connect_json(v)]))
                        .collect(),
                )
            }
        }
        Data::Struct(fields) => Value::Object(
            fields
                .schema
                .fields
                .iter()
                .zip(&fields.values)
                .map(|(field, v)| (field.name.clone(), connect_json(v)))
                .collect(),
        ),
    }
}

/// A header as shown: its name, and its value as text (hex when it is not UTF-8).
fn shown_header(header: &Header) -> (String, Option<String>, bool) {
    let name = String::from_utf8_lossy(&header.key).into_owned();
    match header.value.as_deref() {
        None => (name, None, false),
        Some(value) => match std::str::from_utf8(value) {
            Ok(text) => (name, Some(text.to_string()), false),
            Err(_) => (name, Some(hex(value)), true),
        },
    }
}

impl Filters {
    fn matches(
        &self,
        view: &expr::Record<'_>,
        raw_key: Option<&[u8]>,
        raw_value: Option<&[u8]>,
    ) -> bool {
        let contains = |text: Option<&str>, raw: Option<&[u8]>, needle: &str| {
            text.is_some_and(|t| t.contains(needle))
                || raw.is_some_and(|r| String::from_utf8_lossy(r).contains(needle))
        };
        if let Some(needle) = &self.key
            && !contains(view.key, raw_key, needle)
        {
            return false;
        }
        if let Some(needle) = &self.value
            && !contains(view.value, raw_value, needle)
        {
            return false;
        }
        if let Some(needle) = &self.header
            && !view.headers.iter().any(|(name, value)| {
                name.contains(needle.as_str())
                    || value
                        .as_deref()
                        .is_some_and(|v| v.contains(needle.as_str()))
            })
        {
            return false;
        }
        self.expr.as_ref().is_none_or(|expr| expr.matches(view))
    }
}

// The browse.

/// What a browse reads: each partition from `start` up to `end` (its high watermark when
/// the browse began).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PartitionPlan {
    partition: i32,
    start: i64,
    end: i64,
}

/// The partitions to read, and the partitions that could not be planned (and why).
struct Plan {
    partitions: Vec<PartitionPlan>,
    errors: Vec<String>,
    /// Matches to stop at: `limit`, or from the latest, `limit` per partition (up to
    /// [`MAX_LIMIT`] in all).
    limit: usize,
}

/// The topic's description, or the error the API answers.
async fn describe(console: &Console, topic: &str) -> Result<TopicDescription, ApiError> {
    let names = [topic.to_string()];
    match console.admin.describe_topics(&names).await?.remove(topic) {
        Some(Ok(description)) => Ok(description),
        Some(Err(error)) => Err(ApiError::kafka(&error)),
        None => Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            format!("the cluster said nothing about topic '{topic}'"),
        )),
    }
}

/// Where one partition starts: `positions` first, else `start` (clamped to what the
/// partition holds).
fn start_offset(start: Start, limit: usize, log_start: i64, end: i64, by_time: Option<i64>) -> i64 {
    let offset = match start {
        Start::Earliest => log_start,
        Start::Latest => end.saturating_sub(limit as i64),
        Start::Offset(offset) => offset,
        Start::Timestamp(_) => match by_time {
            Some(offset) if offset >= 0 => offset,
            _ => end,
        },
    };
    offset.clamp(log_start, end.max(log_start))
}

async fn plan(console: &Console, topic: &str, browse: &Browse) -> Result<Plan, ApiError> {
    let description = describe(console, topic).await?;
    let partitions: Vec<i32> = description
        .partitions
        .iter()
        .map(|p| p.partition)
        .filter(|p| browse.partition.is_none_or(|only| only == *p))
        .collect();
    if let Some(only) = browse.partition
        && partitions.is_empty()
    {
        return Err(ApiError::field(
            "partition",
            format!(
                "topic '{topic}' has no partition {only} (it has {})",
                description.partitions.len()
            ),
        ));
    }
    let specs = |spec: OffsetSpec| -> BTreeMap<TopicPartition, OffsetSpec> {
        partitions
            .iter()
            .map(|p| (TopicPartition::new(topic, *p), spec))
            .collect()
    };
    let by_time = match browse.start {
        Start::Timestamp(ms) => Some(specs(OffsetSpec::Timestamp(ms))),
        _ => None,
    };
    let (earliest_specs, latest_specs) = (specs(OffsetSpec::Earliest), specs(OffsetSpec::Latest));
    let (earliest, latest, by_time) = tokio::join!(
        console.admin.list_offsets(&earliest_specs),
        console.admin.list_offsets(&latest_specs),
        async {
            match &by_time {
                Some(specs) => Some(console.admin.list_offsets(specs).await),
                None => None,
            }
        }
    );
    let (earliest, latest) = (earliest?, latest?);
    let by_time = by_time.transpose()?;
    let mut plan = Plan {
        partitions: Vec::new(),
        errors: Vec::new(),
        limit: browse.limit,
    };
    let offset_of = |results: &BTreeMap<TopicPartition, Result<ListOffsetsResultInfo, _>>,
                     tp: &TopicPartition|
     -> Result<i64, String> {
        match results.get(tp) {
            Some(Ok(info)) => Ok(info.offset),
            Some(Err(error)) => Err(format!(
                "partition {}: {}",
                tp.partition,
                ApiError::kafka(error).message
            )),
            None => Err(format!(
                "partition {}: the cluster sent no offsets",
                tp.partition
            )),
        }
    };
    for partition in partitions {
        let tp = TopicPartition::new(topic, partition);
        let bounds = offset_of(&earliest, &tp).and_then(|start| {
            let end = offset_of(&latest, &tp)?;
            let found = match &by_time {
                Some(results) => Some(offset_of(results, &tp)?),
                None => None,
            };
            Ok((start, end, found))
        });
        let (log_start, end, found) = match bounds {
            Ok(bounds) => bounds,
            Err(reason) => {
                plan.errors.push(reason);
                continue;
            }
        };
        let start = match browse.positions.get(&partition) {
            Some(position) => (*position).clamp(log_start, end.max(log_start)),
            None => start_offset(browse.start, browse.limit, log_start, end, found),
        };
        plan.partitions.push(PartitionPlan {
            partition,
            start,
            end,
        });
    }
    plan.limit = per_partition_limit(browse, plan.partitions.len());
    Ok(plan)
}

/// From the latest (not continuing), the last `limit` of each partition are shown: the
/// matches stop at `limit` per partition read, at most [`MAX_LIMIT`] (or `limit`) in all.
fn per_partition_limit(browse: &Browse, partitions: usize) -> usize {
    if browse.start == Start::Latest && browse.positions.is_empty() {
        browse
            .limit
            .saturating_mul(partitions)
            .min(MAX_LIMIT)
            .max(browse.limit)
    } else {
        browse.limit
    }
}

/// Why a browse stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Every partition was read to its end.
    End,
    Limit,
    ScanBound,
    Time,
    Disconnected,
    ShuttingDown,
    Error,
}

impl Stop {
    fn name(self) -> &'static str {
        match self {
            Stop::End => "end",
            Stop::Limit => "limit",
            Stop::ScanBound => "scan-bound",
            Stop::Time => "time",
            Stop::Disconnected => "disconnected",
            Stop::ShuttingDown => "shutting-down",
            Stop::Error => "error",
        }
    }
}

/// A browse in progress: where each partition got to, what was read and sent.
struct Scan {
    lines: mpsc::Sender<Bytes>,
    positions: BTreeMap<i32, i64>,
    ends: BTreeMap<i32, i64>,
    scanned: u64,
    matched: usize,
}

impl Scan {
    /// Sends one line; false when the client went away.
    async fn send(&self, line: &Value) -> bool {
        let mut text = line.to_string();
        text.push('\n');
        self.lines.send(Bytes::from(text)).await.is_ok()
    }
}

async fn browse(
    State(console): State<Arc<Console>>,
    Path(topic): Path<String>,
    query: Result<Query<BrowseQuery>, QueryRejection>,
) -> Response {
    let request = match query {
        Ok(Query(query)) => parse_browse(query),
        Err(rejection) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the query string: {rejection}"),
        )),
    };
    let request = match request {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    let plan = match plan(&console, &topic, &request).await {
        Ok(plan) => plan,
        Err(error) => return error.into_response(),
    };
    let (sender, receiver) = mpsc::channel(LINES_BUFFERED);
    tokio::spawn(run_scan(console, topic, request, plan, sender));
    ndjson(receiver)
}

/// The NDJSON answer: each line of the scan as it comes (the body ends with the scan;
/// dropping it, when the client goes away, ends the scan).
fn ndjson(lines: mpsc::Receiver<Bytes>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(Lines(lines)),
    )
        .into_response()
}

/// The scan's lines as a stream of body chunks.
struct Lines(mpsc::Receiver<Bytes>);

impl futures_core::Stream for Lines {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.0.poll_recv(cx).map(|line| line.map(Ok))
    }
}

/// Reads the plan's partitions and sends the matching records, then the end line.
async fn run_scan(
    console: Arc<Console>,
    topic: String,
    browse: Browse,
    plan: Plan,
    lines: mpsc::Sender<Bytes>,
) {
    let mut scan = Scan {
        lines,
        positions: plan
            .partitions
            .iter()
            .map(|p| (p.partition, p.start))
            .collect(),
        ends: plan
            .partitions
            .iter()
            .map(|p| (p.partition, p.end))
            .collect(),
        scanned: 0,
        matched: 0,
    };
    for error in &plan.errors {
        if !scan.send(&json!({"error": {"message": error}})).await {
            return;
        }
    }
    let pending: Vec<PartitionPlan> = plan
        .partitions
        .iter()
        .copied()
        .filter(|p| p.start < p.end)
        .collect();
    let stop = if pending.is_empty() {
        Stop::End
    } else {
        match read(&console, &topic, &browse, &pending, plan.limit, &mut scan).await {
            Ok(stop) => stop,
            Err(message) => {
                scan.send(&json!({"error": {"message": message}})).await;
                Stop::Error
            }
        }
    };
    if stop == Stop::Disconnected {
        return;
    }
    let done = scan
        .positions
        .iter()
        .all(|(p, position)| scan.ends.get(p).is_none_or(|end| position >= end));
    let by_partition = |map: &BTreeMap<i32, i64>| -> serde_json::Map<String, Value> {
        map.iter().map(|(p, o)| (p.to_string(), json!(o))).collect()
    };
    let end = json!({"end": {
        "positions": by_partition(&scan.positions),
        "ends": by_partition(&scan.ends),
        "scanned": scan.scanned,
        "matched": scan.matched,
        "reason": stop.name(),
        "done": done,
    }});
    scan.send(&end).await;
}

/// Reads `pending` partitions from their start to their end with a group-less consumer.
async fn read(
    console: &Console,
    topic: &str,
    browse: &Browse,
    pending: &[PartitionPlan],
    limit: usize,
    scan: &mut Scan,
) -> Result<Stop, String> {
    let client = console.client_config();
    let mut config = ConsumerConfig::new(client.bootstrap_servers);
    config.client_id = format!("{}-browser", client.client_id);
    config.enable_auto_commit = false;
    config.auto_offset_reset = AutoOffsetReset::Earliest;
    config.fetch_max_bytes = FETCH_BYTES;
    config.max_partition_fetch_bytes = FETCH_BYTES;
    config.fetch_max_wait_ms = 200;
    let mut consumer = Consumer::new(config)
        .await
        .map_err(|e| format!("connecting to the cluster: {e}"))?;
    let assigned: Vec<TopicPartition> = pending
        .iter()
        .map(|p| TopicPartition::new(topic, p.partition))
        .collect();
    consumer
        .assign(assigned.clone())
        .map_err(|e| e.to_string())?;
    for (tp, p) in assigned.iter().zip(pending) {
        consumer.seek(tp, p.start).map_err(|e| e.to_string())?;
    }
    let mut decoder = Decoder::new(browse.decode, console.registry.clone());
    let mut done: BTreeSet<i32> = BTreeSet::new();
    let started = Instant::now();
    let mut progress = Instant::now();
    let mut stop_signal = console.stop.clone();
    loop {
        if done.len() == pending.len() {
            return Ok(Stop::End);
        }
        if *stop_signal.borrow() {
            return Ok(Stop::ShuttingDown);
        }
        if scan.lines.is_closed() {
            return Ok(Stop::Disconnected);
        }
        if started.elapsed() > BROWSE_TIME {
            return Ok(Stop::Time);
        }
        if progress.elapsed() > IDLE_TIME {
            let waiting: Vec<String> = pending
                .iter()
                .filter(|p| !done.contains(&p.partition))
                .map(|p| p.partition.to_string())
                .collect();
            return Err(format!(
                "no records arrived for {} s from partition(s) {} (is their leader \
                 available?)",
                IDLE_TIME.as_secs(),
                waiting.join(", ")
            ));
        }
        let records = tokio::select! {
            polled = consumer.poll(Duration::from_millis(250)) => {
                polled.map_err(|e| format!("reading the topic: {e}"))?
            }
            () = scan.lines.closed() => return Ok(Stop::Disconnected),
            () = shutting_down(&mut stop_signal) => return Ok(Stop::ShuttingDown),
        };
        for record in &records {
            let Some(&end) = scan.ends.get(&record.partition) else {
                continue;
            };
            let position = scan.positions.get(&record.partition).copied().unwrap_or(0);
            if record.offset >= end || record.offset < position {
                continue;
            }
            progress = Instant::now();
            scan.scanned += 1;
            scan.positions.insert(record.partition, record.offset + 1);
            if let Some(line) = examine(record, &browse.filters, &mut decoder).await {
                if !scan.send(&line).await {
                    return Ok(Stop::Disconnected);
                }
                scan.matched += 1;
            }
            if record.offset + 1 >= end {
                done.insert(record.partition);
            }
            if scan.matched >= limit {
                return Ok(Stop::Limit);
            }
            if scan.scanned >= SCAN_BOUND {
                return Ok(Stop::ScanBound);
            }
        }
        // Offsets without records (compacted away, transaction markers) move the
        // consumer's position past records it never hands out.
        for (tp, metrics) in consumer.metrics() {
            let (Some(position), Some(&end)) = (metrics.position, scan.ends.get(&tp.partition))
            else {
                continue;
            };
            let ours = scan.positions.entry(tp.partition).or_insert(position);
            if position.min(end) > *ours {
                *ours = position.min(end);
                progress = Instant::now();
            }
            if *ours >= end {
                done.insert(tp.partition);
            }
        }
        let finished: Vec<TopicPartition> = assigned
            .iter()
            .filter(|tp| done.contains(&tp.partition))
            .cloned()
            .collect();
        if !finished.is_empty() {
            consumer.pause(&finished).map_err(|e| e.to_string())?;
        }
    }
}

/// Resolves when the console stops (never, if nothing can stop it any more).
async fn shutting_down(stop: &mut tokio::sync::watch::Receiver<bool>) {
    if stop.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The record's line when it passes the filters.
async fn examine(
    record: &ConsumerRecord,
    filters: &Filters,
    decoder: &mut Decoder,
) -> Option<Value> {
    let key = decoder.decode_key(record.key.as_deref()).await;
    let value = decoder.decode(record.value.as_deref()).await;
    let headers: Vec<(String, Option<String>, bool)> =
        record.headers.iter().map(shown_header).collect();
    let pairs: Vec<(String, Option<String>)> = headers
        .iter()
        .map(|(name, value, _)| (name.clone(), value.clone()))
        .collect();
    let size = record.key.as_ref().map_or(0, |k| k.len())
        + record.value.as_ref().map_or(0, |v| v.len())
        + record
            .headers
            .iter()
            .map(|h| h.key.len() + h.value.as_ref().map_or(0, |v| v.len()))
            .sum::<usize>();
    let structured = |shown: &Shown| shown.schema_id.is_some() || shown.format == "json";
    let view = expr::Record {
        partition: record.partition,
        offset: record.offset,
        timestamp: record.timestamp,
        size,
        key: key.text.as_deref(),
        value: value.text.as_deref(),
        key_json: structured(&key).then_some(&key.value),
        value_json: structured(&value).then_some(&value.value),
        headers: &pairs,
    };
    if !filters.matches(&view, record.key.as_deref(), record.value.as_deref()) {
        return None;
    }
    let mut row = serde_json::Map::new();
    row.insert("partition".into(), json!(record.partition));
    row.insert("offset".into(), json!(record.offset));
    row.insert("timestamp".into(), json!(record.timestamp));
    row.insert(
        "timestamp_type".into(),
        json!(match record.timestamp_type {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }),
    );
    for (name, shown) in [("key", key), ("value", value)] {
        if let Some(id) = shown.schema_id {
            let field = if name == "key" {
                "key_schema_id"
            } else {
                "schema_id"
            };
            row.insert(field.into(), json!(id));
        }
        if let Some(error) = shown.error {
            row.insert(format!("{name}_error"), json!(error));
        }
        if shown.truncated {
            row.insert(format!("{name}_truncated"), json!(true));
        }
        row.insert(format!("{name}_format"), json!(shown.format));
        row.insert(name.into(), shown.value);
    }
    row.insert(
        "headers".into(),
        Value::Array(
            headers
                .into_iter()
                .map(|(name, value, binary)| {
                    if binary {
                        json!({"name": name, "value": value, "hex": true})
                    } else {
                        json!({"name": name, "value": value})
                    }
                })
                .collect(),
        ),
    );
    row.insert("size".into(), json!(size));
    Some(json!({ "record": row }))
}

// Producing.

/// The produce form, as `console.js` sends it (the API also takes the short names).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ProduceBody {
    #[serde(alias = "partition")]
    produce_partition: Value,
    #[serde(alias = "key")]
    produce_key: Option<String>,
    #[serde(alias = "value")]
    produce_value: Option<String>,
    #[serde(alias = "headers")]
    produce_headers: Option<String>,
    #[serde(alias = "format")]
    produce_format: Option<String>,
}

/// `name=value` per line (blank lines skipped; the value may be empty or hold `=`).
fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err(format!(
                "line {}: '{}' is not name=value",
                number + 1,
                line.trim()
            ));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("line {}: the header has no name", number + 1));
        }
        headers.push((name.to_string(), value.to_string()));
    }
    Ok(headers)
}

fn parse_partition(value: &Value) -> Result<Option<i32>, ApiError> {
    let bad = |shown: &str| {
        ApiError::field(
            "produce_partition",
            format!("'{shown}' is not a partition number (leave it empty to let the key choose)"),
        )
    };
    match value {
        Value::Null => Ok(None),
        Value::String(text) if text.trim().is_empty() => Ok(None),
        Value::String(text) => text
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|p| *p >= 0)
            .map(Some)
            .ok_or_else(|| bad(text)),
        Value::Number(number) => number
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .filter(|p| *p >= 0)
            .map(Some)
            .ok_or_else(|| bad(&number.to_string())),
        other => Err(bad(&other.to_string())),
    }
}

/// The value as Avro in Confluent's wire format, with the latest schema of
/// `<topic>-value`.
async fn avro_value(
    registry: &SchemaRegistryClient,
    topic: &str,
    text: &str,
) -> Result<Vec<u8>, ApiError> {
    let subject = format!("{topic}-value");
    let latest = registry.get_latest(&subject).await.map_err(|e| {
        ApiError::field(
            "produce_format",
            format!("no Avro schema to write with under subject '{subject}': {e}"),
        )
    })?;
    if latest.schema.schema_type != SchemaType::Avro {
        return Err(ApiError::field(
            "produce_format",
            format!(
                "the latest schema of '{subject}' (id {}) is {}, not AVRO",
                latest.id,
                latest.schema.schema_type.name()
            ),
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ApiError::field(
            "produce_value",
            format!("an Avro value is written as JSON shaped like the schema: {e}"),
        )
    })?;
    let parsed = ParsedAvroSchema::parse_registered(registry, &latest.schema)
        .await
        .map_err(|e| {
            ApiError::field(
                "produce_format",
                format!("the schema of '{subject}' (id {}): {e}", latest.id),
            )
        })?;
    let unfit = |e: &dyn std::fmt::Display| {
        ApiError::field(
            "produce_value",
            format!(
                "the value does not fit the schema of '{subject}' (version {}, id {}): {e}",
                latest.version, latest.id
            ),
        )
    };
    let datum = apache_avro::types::Value::try_from(value).map_err(|e| unfit(&e))?;
    let datum = parsed.conform(datum).map_err(|e| unfit(&e))?;
    let mut framed = Vec::new();
    write_header(&mut framed, latest.id);
    parsed.encode(&datum, &mut framed).map_err(|e| unfit(&e))?;
    Ok(framed)
}

/// What a failed send means for the form: the broker's refusal of the record goes next to
/// the value.
fn produce_error(error: &ProducerError, size: usize, max_message_bytes: Option<&str>) -> ApiError {
    let mut inner = error;
    while let ProducerError::Fatal(e) | ProducerError::Abortable(e) = inner {
        inner = e.as_ref();
    }
    match inner {
        ProducerError::Api(api) => {
            let mut answer = ApiError::kafka(api);
            let name = api.code.name();
            if matches!(
                name.as_str(),
                "MESSAGE_TOO_LARGE"
                    | "RECORD_LIST_TOO_LARGE"
                    | "INVALID_RECORD"
                    | "CORRUPT_MESSAGE"
            ) {
                if name != "INVALID_RECORD" && name != "CORRUPT_MESSAGE" {
                    let _ = write!(
                        answer.message,
                        " (the record is {}; {})",
                        html::bytes(size as u64),
                        match max_message_bytes.and_then(|m| m.parse::<u64>().ok()) {
                            Some(max) => {
                                format!("the topic's max.message.bytes is {}", html::bytes(max))
                            }
                            None => "more than the topic's max.message.bytes".to_string(),
                        }
                    );
                }
                answer = answer.on("produce_value");
            }
            answer
        }
        ProducerError::RecordTooLarge { .. } => {
            ApiError::field("produce_value", format!("the record was not sent: {error}"))
        }
        ProducerError::InvalidRecord(reason) if reason.contains("partition") => {
            ApiError::field("produce_partition", reason.clone())
        }
        ProducerError::InvalidRecord(reason) => ApiError::field("produce_value", reason.clone()),
        ProducerError::Timeout { .. } => {
            ApiError::new(StatusCode::GATEWAY_TIMEOUT, format!("the cluster: {error}"))
        }
        _ => ApiError::new(StatusCode::BAD_GATEWAY, format!("the cluster: {error}")),
    }
}

async fn produce(
    State(console): State<Arc<Console>>,
    Path(topic): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request is larger than the console takes ({})",
                    html::bytes(PRODUCE_BODY_BYTES as u64)
                ),
            )
            .on("produce_value")
        } else {
            ApiError::new(rejection.status(), rejection.body_text())
        }
    })?;
    let form: ProduceBody = serde_json::from_slice(&body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the request is not the produce form's JSON: {e}"),
        )
    })?;
    let partition = parse_partition(&form.produce_partition)?;
    let headers = parse_headers(form.produce_headers.as_deref().unwrap_or(""))
        .map_err(|reason| ApiError::field("produce_headers", reason))?;
    let text = form.produce_value.unwrap_or_default();
    let format = form.produce_format.as_deref().map_or("text", str::trim);
    let value = match format {
        "" | "text" => text.into_bytes(),
        "json" => match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
            Ok(_) => text.into_bytes(),
            Err(e) => return Err(ApiError::field("produce_value", format!("not JSON: {e}"))),
        },
        "avro" => match &console.registry {
            Some(registry) => avro_value(registry, &topic, &text).await?,
            None => {
                return Err(ApiError::field(
                    "produce_format",
                    "the console has no schema registry (--registry-url): Avro needs one",
                ));
            }
        },
        other => {
            return Err(ApiError::field(
                "produce_format",
                format!("'{other}' is not text, json or avro"),
            ));
        }
    };
    let description = describe(&console, &topic).await?;
    if let Some(partition) = partition
        && !description
            .partitions
            .iter()
            .any(|p| p.partition == partition)
    {
        return Err(ApiError::field(
            "produce_partition",
            format!(
                "topic '{topic}' has no partition {partition} (it has {})",
                description.partitions.len()
            ),
        ));
    }
    let mut record = ProducerRecord::new(topic.clone(), value);
    record.partition = partition;
    record.key = form
        .produce_key
        .filter(|k| !k.is_empty())
        .map(|k| Bytes::from(k.into_bytes()));
    for (name, value) in headers {
        record = record.with_header(
            Bytes::from(name.into_bytes()),
            Some(Bytes::from(value.into_bytes())),
        );
    }
    let size = record.value.as_ref().map_or(0, |v| v.len());
    let client = console.client_config();
    let settings: BTreeMap<String, String> = [
        ("bootstrap.servers", client.bootstrap_servers.join(",")),
        ("client.id", format!("{}-producer", client.client_id)),
        ("acks", "all".to_string()),
        ("linger.ms", "0".to_string()),
        ("max.request.size", PRODUCE_BODY_BYTES.to_string()),
        ("buffer.memory", (2 * PRODUCE_BODY_BYTES).to_string()),
        ("max.block.ms", "10000".to_string()),
        ("request.timeout.ms", "15000".to_string()),
        ("delivery.timeout.ms", "30000".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let config = ProducerConfig::from_map(&settings)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let producer = Producer::connect(config)
        .await
        .map_err(|e| ApiError::new(StatusCode::BAD_GATEWAY, format!("the cluster: {e}")))?;
    let sent = match producer.send(record).await {
        Ok(delivery) => delivery.await,
        Err(error) => Err(error),
    };
    let _ = producer.close().await;
    let written = match sent {
        Ok(written) => written,
        Err(error) => {
            let max = if error
                .code()
                .is_some_and(|c| c.name() == "MESSAGE_TOO_LARGE")
            {
                max_message_bytes(&console, &topic).await
            } else {
                None
            };
            return Err(produce_error(&error, size, max.as_deref()));
        }
    };
    let link = format!(
        "/topics/{}/messages?partition={}&from=offset&offset={}&limit=1",
        seg(&topic),
        written.partition,
        written.offset
    );
    Ok(Json(json!({
        "message": format!(
            "Written to partition {} at offset {}",
            written.partition, written.offset
        ),
        "partition": written.partition,
        "offset": written.offset,
        "html": format!("<p><a href=\"{}\">Show the message</a></p>", esc(&link)),
    })))
}

/// The topic's `max.message.bytes`, to explain a refusal (best effort).
async fn max_message_bytes(console: &Console, topic: &str) -> Option<String> {
    let names = [topic.to_string()];
    let configs = console.admin.describe_topic_configs(&names).await.ok()?;
    let entries = configs.get(topic)?.as_ref().ok()?;
    entries
        .iter()
        .find(|entry| entry.name == "max.message.bytes")
        .and_then(|entry| entry.value.clone())
}

// The page.

async fn page(
    State(console): State<Arc<Console>>,
    Path(topic): Path<String>,
    query: Result<Query<BrowseQuery>, QueryRejection>,
) -> Response {
    let prefill = query.map(|Query(q)| q).unwrap_or_default();
    let description = match describe(&console, &topic).await {
        Ok(description) => description,
        Err(error) => {
            return html::error_page(&console, error.status, &topic, &error.message);
        }
    };
    let mut body = String::with_capacity(16 * 1024);
    let _ = write!(
        body,
        "<p><a href=\"/topics/{}\">Topic {}</a> · {} partitions · {}</p>",
        seg(&topic),
        esc(&topic),
        description.partitions.len(),
        if console.registry.is_some() {
            "Avro, Protobuf and JSON Schema decoded through the schema registry"
        } else {
            "no schema registry configured (framed values are shown in hex)"
        }
    );
    body.push_str(&browse_form(&topic, &description, &prefill));
    body.push_str(
        "<p id=\"browse-status\" role=\"status\" aria-live=\"polite\"></p>\
         <ul id=\"browse-errors\" class=\"error\" aria-live=\"polite\"></ul>\
         <table id=\"messages\"><caption class=\"muted\">Messages, in the order they were \
         fetched (partitions are read side by side). Times are UTC.</caption><thead><tr>\
         <th scope=\"col\" class=\"num\">Partition</th><th scope=\"col\" class=\"num\">Offset</th>\
         <th scope=\"col\">Timestamp (UTC)</th><th scope=\"col\">Key</th>\
         <th scope=\"col\">Value</th><th scope=\"col\">Format</th>\
         <th scope=\"col\">Headers</th></tr></thead><tbody></tbody></table>",
    );
    if !console.config.read_only {
        body.push_str(&produce_form(&topic, console.registry.is_some()));
    }
    body.push_str("<script src=\"/assets/messages.js\" defer></script>");
    html::page(
        &console,
        Nav::Topics,
        &format!("Messages of {topic}"),
        &body,
    )
}

fn browse_form(topic: &str, description: &TopicDescription, prefill: &BrowseQuery) -> String {
    let given = |value: &Option<String>| value.clone().unwrap_or_default();
    let mut partitions: Vec<(String, String)> =
        vec![("all".to_string(), "All partitions".to_string())];
    for p in &description.partitions {
        partitions.push((
            p.partition.to_string(),
            format!("Partition {}", p.partition),
        ));
    }
    let partition_options: Vec<(&str, &str)> = partitions
        .iter()
        .map(|(v, l)| (v.as_str(), l.as_str()))
        .collect();
    let decode_options: Vec<(&str, &str)> =
        Decode::ALL.iter().map(|d| (d.name(), d.label())).collect();
    let from = prefill.from.clone().unwrap_or_else(|| "latest".to_string());
    let limit = prefill
        .limit
        .clone()
        .unwrap_or_else(|| DEFAULT_LIMIT.to_string());
    let mut out = String::with_capacity(8 * 1024);
    let _ = write!(
        out,
        "<form id=\"browse\" data-api=\"/api/topics/{}/messages\" aria-label=\"Browse messages\" \
         novalidate><div class=\"row\">",
        seg(topic)
    );
    out.push_str(&html::field(
        "partition",
        "Partition",
        &html::select(
            "partition",
            &partition_options,
            prefill.partition.as_deref().unwrap_or("all"),
        ),
        "",
    ));
    out.push_str(&html::field(
        "from",
        "Start from",
        &html::select(
            "from",
            &[
                ("latest", "Latest (the last N of each partition)"),
                ("earliest", "Earliest"),
                ("offset", "Offset"),
                ("timestamp", "Timestamp"),
            ],
            &from,
        ),
        "",
    ));
    out.push_str(&html::field(
        "offset",
        "Offset",
        &html::number_input("offset", &given(&prefill.offset), "min=\"0\""),
        "with Start from: Offset",
    ));
    out.push_str(&html::field(
        "timestamp",
        "Timestamp",
        &html::text_input(
            "timestamp",
            &given(&prefill.timestamp),
            "placeholder=\"2026-12-07T15:00:00Z\"",
        ),
        "with Start from: Timestamp; UTC, or ms since the epoch",
    ));
    out.push_str(&html::field(
        "limit",
        "Max messages",
        &html::number_input("limit", &limit, &format!("min=\"1\" max=\"{MAX_LIMIT}\"")),
        &format!("at most {MAX_LIMIT}; a browse scans at most {SCAN_BOUND} records"),
    ));
    out.push_str("</div><div class=\"row\">");
    out.push_str(&html::field(
        "key",
        "Key contains",
        &html::text_input("key", &given(&prefill.key), ""),
        "",
    ));
    out.push_str(&html::field(
        "value",
        "Value contains",
        &html::text_input("value", &given(&prefill.value), ""),
        "",
    ));
    out.push_str(&html::field(
        "header",
        "A header contains",
        &html::text_input("header", &given(&prefill.header), ""),
        "in its name or value",
    ));
    out.push_str("</div>");
    out.push_str(&html::field(
        "expr",
        "Expression",
        &html::text_input(
            "expr",
            &given(&prefill.expr),
            "class=\"mono\" size=\"90\" spellcheck=\"false\" autocomplete=\"off\" \
             aria-describedby=\"h-expr\" \
             placeholder='key == \"k1\" &amp;&amp; json.amount &gt; 100'",
        ),
        "fields: key, value, offset, partition, timestamp, size, header.NAME, json.PATH (the \
         decoded value: json.user.id, json.items[0]; key.PATH for the key); operators: == != \
         < <= > >= contains startswith endswith; && || ! and parentheses; \"strings\", numbers, \
         true, false, null; timestamps compare with \"2026-12-07T15:00:00Z\"",
    ));
    out.push_str("<div class=\"row\">");
    out.push_str(&html::field(
        "decode",
        "Decode as",
        &html::select(
            "decode",
            &decode_options,
            prefill.decode.as_deref().unwrap_or("auto"),
        ),
        "",
    ));
    out.push_str(&html::field(
        "live",
        "Live: keep following new messages",
        "<input type=\"checkbox\" id=\"f-live\" name=\"live\">",
        "",
    ));
    out.push_str(
        "</div><div class=\"actions\"><button type=\"submit\" id=\"browse-button\">Browse</button>\
         <button type=\"button\" id=\"stop-button\" class=\"secondary\" disabled>Stop</button>\
         <button type=\"button\" id=\"more-button\" class=\"secondary\" disabled>More</button>\
         </div><p class=\"form-error\" data-error-for=\"_form\" role=\"alert\"></p></form>",
    );
    out
}

fn produce_form(topic: &str, registry: bool) -> String {
    let mut out = String::from("<h2 id=\"produce\">Produce a message</h2>");
    out.push_str(&html::form_start(
        &format!("/api/topics/{}/messages", seg(topic)),
        "POST",
        OnSuccess::Result("produce-result"),
        "Produce a message",
    ));
    out.push_str("<div class=\"row\">");
    out.push_str(&html::field(
        "produce_partition",
        "Partition",
        &html::number_input("produce_partition", "", "min=\"0\" placeholder=\"any\""),
        "empty: the key chooses (no key: any partition)",
    ));
    let formats: &[(&str, &str)] = if registry {
        &[
            ("text", "Text"),
            ("json", "JSON (validated)"),
            ("avro", "Avro (the subject's latest schema)"),
        ]
    } else {
        &[("text", "Text"), ("json", "JSON (validated)")]
    };
    out.push_str(&html::field(
        "produce_format",
        "Value format",
        &html::select("produce_format", formats, "text"),
        &format!("Avro writes with the latest schema of subject {topic}-value"),
    ));
    out.push_str("</div>");
    out.push_str(&html::field(
        "produce_key",
        "Key",
        &html::text_input("produce_key", "", ""),
        "empty: no key",
    ));
    out.push_str(&html::field(
        "produce_value",
        "Value",
        &html::textarea("produce_value", "", 6, "spellcheck=\"false\""),
        "for Avro, JSON shaped like the schema",
    ));
    out.push_str(&html::field(
        "produce_headers",
        "Headers",
        &html::textarea("produce_headers", "", 3, "spellcheck=\"false\""),
        "one name=value per line",
    ));
    out.push_str(&html::form_end("Produce"));
    out.push_str("<div id=\"produce-result\" aria-live=\"polite\"></div>");
    out
}

// The expression language.

/// The filter language of the browser:
///
/// ```text
/// expr     := or
/// or       := and (("||" | "or") and)*
/// and      := not (("&&" | "and") not)*
/// not      := ("!" | "not") not | primary
/// primary  := "(" expr ")" | operand [op operand]
/// op       := == | != | < | <= | > | >= | contains | startswith | endswith
/// operand  := field | "string" | 'string' | number | true | false | null
/// field    := key | value | offset | partition | timestamp | size
///           | header.NAME | header["any name"]
///           | json.PATH | value.PATH | key.PATH      (PATH: a.b[0]."c d")
/// ```
///
/// A field alone is true when present (a header that is there, a JSON path that leads
/// somewhere, not `false`). Comparisons: numbers numerically (a string that reads as a
/// number or as a time, `"2026-12-07T15:00:00Z"`, compares as one), strings by their
/// characters, anything missing only equals `null`. `contains` is substring on text,
/// membership on a JSON array, a key on a JSON object. Keywords are case-insensitive.
mod expr {
    use std::cmp::Ordering;
    use std::fmt;

    use std::borrow::Cow;

    use serde_json::Value;

    use super::parse_time;

    /// The longest expression accepted, in characters.
    const MAX_LENGTH: usize = 4096;
    /// The deepest nesting of parentheses and negations.
    const MAX_DEPTH: usize = 64;

    #[derive(Debug, Clone, PartialEq)]
    pub enum Expr {
        Or(Box<Expr>, Box<Expr>),
        And(Box<Expr>, Box<Expr>),
        Not(Box<Expr>),
        Compare(Operand, Op, Operand),
        Present(Field),
        /// `true` or `false` alone.
        Const(bool),
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Operand {
        Field(Field),
        Literal(Literal),
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Literal {
        Null,
        Bool(bool),
        Int(i64),
        Float(f64),
        Str(String),
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Field {
        Key,
        Value,
        Offset,
        Partition,
        Timestamp,
        Size,
        Header(String),
        /// A path into the decoded key (`key: true`) or value.
        Json {
            key: bool,
            path: Vec<Seg>,
        },
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Seg {
        Name(String),
        Index(usize),
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Op {
        Eq,
        Ne,
        Lt,
        Le,
        Gt,
        Ge,
        Contains,
        StartsWith,
        EndsWith,
    }

    /// Why an expression does not parse, and where (a 1-based character position).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ParseError {
        pub position: usize,
        pub message: String,
    }

    impl fmt::Display for ParseError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "at position {}: {}", self.position, self.message)
        }
    }

    fn error(at: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            position: at + 1,
            message: message.into(),
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    enum Tok {
        /// A field: its segments, and whether it had a `.` or `[...]` (not a keyword then).
        Path(Vec<Seg>, bool),
        Str(String),
        Int(i64),
        Float(f64),
        LParen,
        RParen,
        And,
        Or,
        Not,
        Op(Op),
        True,
        False,
        Null,
        End,
    }

    #[derive(Debug, Clone)]
    struct Token {
        tok: Tok,
        /// 0-based character index.
        at: usize,
        /// As typed (for messages).
        text: String,
    }

    fn is_name_start(c: char) -> bool {
        c.is_alphabetic() || matches!(c, '_' | '$' | '@')
    }

    fn is_name_char(c: char) -> bool {
        c.is_alphanumeric() || matches!(c, '_' | '-' | '$' | '@')
    }

    /// A quoted string starting at `start`: its value and its length in characters.
    fn lex_string(chars: &[char], start: usize) -> Result<(String, usize), ParseError> {
        let quote = chars[start];
        let mut out = String::new();
        let mut i = start + 1;
        loop {
            let Some(&c) = chars.get(i) else {
                return Err(error(start, "this string is not closed"));
            };
            if c == quote {
                return Ok((out, i + 1 - start));
            }
            if c == '\\' {
                let escaped = chars.get(i + 1).copied();
                match escaped {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some(c @ ('\\' | '"' | '\'')) => out.push(c),
                    Some('u') => {
                        let code: String = chars.iter().skip(i + 2).take(4).collect();
                        let c = u32::from_str_radix(&code, 16)
                            .ok()
                            .filter(|_| code.len() == 4)
                            .and_then(char::from_u32)
                            .ok_or_else(|| error(i, "\\u takes 4 hex digits"))?;
                        out.push(c);
                        i += 4;
                    }
                    Some(other) => {
                        return Err(error(i, format!("unknown escape '\\{other}'")));
                    }
                    None => return Err(error(start, "this string is not closed")),
                }
                i += 2;
                continue;
            }
            out.push(c);
            i += 1;
        }
    }

    /// A number starting at `start`.
    fn lex_number(chars: &[char], start: usize) -> Result<(Tok, usize), ParseError> {
        let mut i = start;
        if chars[i] == '-' {
            i += 1;
        }
        let digits = |mut i: usize| {
            while chars.get(i).is_some_and(char::is_ascii_digit) {
                i += 1;
            }
            i
        };
        i = digits(i);
        let mut float = false;
        if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            float = true;
            i = digits(i + 1);
        }
        if matches!(chars.get(i), Some('e' | 'E')) {
            let mut j = i + 1;
            if matches!(chars.get(j), Some('+' | '-')) {
                j += 1;
            }
            if chars.get(j).is_some_and(char::is_ascii_digit) {
                float = true;
                i = digits(j);
            }
        }
        if chars.get(i).is_some_and(|c| is_name_char(*c) || *c == '.') {
            return Err(error(
                i,
                format!("unexpected '{}' after a number", chars[i]),
            ));
        }
        let text: String = chars[start..i].iter().collect();
        let tok = if float {
            Tok::Float(
                text.parse()
                    .map_err(|_| error(start, format!("'{text}' is not a number")))?,
            )
        } else {
            match text.parse::<i64>() {
                Ok(n) => Tok::Int(n),
                Err(_) => Tok::Float(
                    text.parse()
                        .map_err(|_| error(start, format!("'{text}' is not a number")))?,
                ),
            }
        };
        Ok((tok, i - start))
    }

    /// A field path starting at `start`: `a.b-c[0]["d e"]`.
    fn lex_path(chars: &[char], start: usize) -> Result<(Tok, usize), ParseError> {
        let mut segs = Vec::new();
        let mut compound = false;
        let mut i = start;
        loop {
            let begin = i;
            while chars.get(i).is_some_and(|c| is_name_char(*c)) {
                i += 1;
            }
            if begin == i {
                return Err(error(i, "expected a name after '.'"));
            }
            segs.push(Seg::Name(chars[begin..i].iter().collect()));
            while chars.get(i) == Some(&'[') {
                compound = true;
                let open = i;
                i += 1;
                match chars.get(i) {
                    Some(c) if c.is_ascii_digit() => {
                        let begin = i;
                        while chars.get(i).is_some_and(char::is_ascii_digit) {
                            i += 1;
                        }
                        let text: String = chars[begin..i].iter().collect();
                        let index = text
                            .parse()
                            .map_err(|_| error(begin, format!("index {text} is too large")))?;
                        segs.push(Seg::Index(index));
                    }
                    Some('"' | '\'') => {
                        let (name, length) = lex_string(chars, i)?;
                        segs.push(Seg::Name(name));
                        i += length;
                    }
                    _ => {
                        return Err(error(i, "expected an index or a quoted name after '['"));
                    }
                }
                if chars.get(i) != Some(&']') {
                    return Err(error(
                        i,
                        format!("expected ']' to close the '[' at position {}", open + 1),
                    ));
                }
                i += 1;
            }
            if chars.get(i) == Some(&'.') {
                compound = true;
                i += 1;
                continue;
            }
            return Ok((Tok::Path(segs, compound), i - start));
        }
    }

    fn lex(source: &str) -> Result<Vec<Token>, ParseError> {
        let chars: Vec<char> = source.chars().collect();
        if chars.len() > MAX_LENGTH {
            return Err(error(
                MAX_LENGTH,
                format!("the expression is longer than {MAX_LENGTH} characters"),
            ));
        }
        let mut tokens = Vec::new();
        let mut i = 0;
        while let Some(&c) = chars.get(i) {
            if c.is_whitespace() {
                i += 1;
                continue;
            }
            let next = chars.get(i + 1).copied();
            let (tok, length) = match (c, next) {
                ('&', Some('&')) => (Tok::And, 2),
                ('|', Some('|')) => (Tok::Or, 2),
                ('=', Some('=')) => (Tok::Op(Op::Eq), 2),
                ('!', Some('=')) => (Tok::Op(Op::Ne), 2),
                ('<', Some('=')) => (Tok::Op(Op::Le), 2),
                ('>', Some('=')) => (Tok::Op(Op::Ge), 2),
                ('<', _) => (Tok::Op(Op::Lt), 1),
                ('>', _) => (Tok::Op(Op::Gt), 1),
                ('!', _) => (Tok::Not, 1),
                ('(', _) => (Tok::LParen, 1),
                (')', _) => (Tok::RParen, 1),
                ('=', _) => return Err(error(i, "use == to compare")),
                ('&', _) => return Err(error(i, "use && for and")),
                ('|', _) => return Err(error(i, "use || for or")),
                ('"' | '\'', _) => {
                    let (text, length) = lex_string(&chars, i)?;
                    (Tok::Str(text), length)
                }
                (c, next)
                    if c.is_ascii_digit()
                        || (c == '-' && next.is_some_and(|n| n.is_ascii_digit())) =>
                {
                    lex_number(&chars, i)?
                }
                (c, _) if is_name_start(c) => {
                    let (tok, length) = lex_path(&chars, i)?;
                    let keyword = match &tok {
                        Tok::Path(segs, false) => match &segs[..] {
                            [Seg::Name(word)] => keyword(word),
                            _ => None,
                        },
                        _ => None,
                    };
                    (keyword.unwrap_or(tok), length)
                }
                (c, _) => return Err(error(i, format!("unexpected character '{c}'"))),
            };
            tokens.push(Token {
                tok,
                at: i,
                text: chars[i..i + length].iter().collect(),
            });
            i += length;
        }
        tokens.push(Token {
            tok: Tok::End,
            at: chars.len(),
            text: String::new(),
        });
        Ok(tokens)
    }

    fn keyword(word: &str) -> Option<Tok> {
        Some(match word.to_ascii_lowercase().as_str() {
            "and" => Tok::And,
            "or" => Tok::Or,
            "not" => Tok::Not,
            "contains" => Tok::Op(Op::Contains),
            "startswith" | "starts_with" => Tok::Op(Op::StartsWith),
            "endswith" | "ends_with" => Tok::Op(Op::EndsWith),
            "true" => Tok::True,
            "false" => Tok::False,
            "null" => Tok::Null,
            _ => return None,
        })
    }

    fn shown(token: &Token) -> String {
        match token.tok {
            Tok::End => "the end of the expression".to_string(),
            _ => format!("'{}'", token.text),
        }
    }

    fn field(segs: Vec<Seg>, token: &Token) -> Result<Field, ParseError> {
        let mut segs = segs.into_iter();
        let Some(Seg::Name(first)) = segs.next() else {
            return Err(error(token.at, "expected a field"));
        };
        let rest: Vec<Seg> = segs.collect();
        let first = first.to_ascii_lowercase();
        let plain = |field: Field| {
            if rest.is_empty() {
                Ok(field)
            } else {
                Err(error(
                    token.at,
                    format!("'{first}' is a number: it has no fields ('{}')", token.text),
                ))
            }
        };
        match first.as_str() {
            "key" if rest.is_empty() => Ok(Field::Key),
            "value" if rest.is_empty() => Ok(Field::Value),
            "key" => Ok(Field::Json {
                key: true,
                path: rest,
            }),
            "value" | "json" => Ok(Field::Json {
                key: false,
                path: rest,
            }),
            "offset" => plain(Field::Offset),
            "partition" => plain(Field::Partition),
            "timestamp" => plain(Field::Timestamp),
            "size" => plain(Field::Size),
            "header" | "headers" => {
                let mut names = Vec::new();
                for seg in &rest {
                    match seg {
                        Seg::Name(name) => names.push(name.as_str()),
                        Seg::Index(_) => {
                            return Err(error(
                                token.at,
                                "a header is named, not numbered: header.NAME or header[\"NAME\"]",
                            ));
                        }
                    }
                }
                if names.is_empty() {
                    return Err(error(
                        token.at,
                        "name the header: header.NAME or header[\"any name\"]",
                    ));
                }
                Ok(Field::Header(names.join(".")))
            }
            _ => Err(error(
                token.at,
                format!(
                    "unknown field '{}': use key, value, offset, partition, timestamp, size, \
                     header.NAME or json.PATH",
                    token.text
                ),
            )),
        }
    }

    struct Parser {
        tokens: Vec<Token>,
        at: usize,
        depth: usize,
    }

    impl Parser {
        fn peek(&self) -> &Token {
            &self.tokens[self.at]
        }

        fn advance(&mut self) -> Token {
            let token = self.tokens[self.at].clone();
            if self.at + 1 < self.tokens.len() {
                self.at += 1;
            }
            token
        }

        fn nest(&mut self, token: &Token) -> Result<(), ParseError> {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(error(
                    token.at,
                    format!("nested deeper than {MAX_DEPTH} levels"),
                ));
            }
            Ok(())
        }

        fn or(&mut self) -> Result<Expr, ParseError> {
            let mut left = self.and()?;
            while self.peek().tok == Tok::Or {
                self.advance();
                let right = self.and()?;
                left = Expr::Or(Box::new(left), Box::new(right));
            }
            Ok(left)
        }

        fn and(&mut self) -> Result<Expr, ParseError> {
            let mut left = self.not()?;
            while self.peek().tok == Tok::And {
                self.advance();
                let right = self.not()?;
                left = Expr::And(Box::new(left), Box::new(right));
            }
            Ok(left)
        }

        fn not(&mut self) -> Result<Expr, ParseError> {
            if self.peek().tok == Tok::Not {
                let token = self.advance();
                self.nest(&token)?;
                let inner = self.not()?;
                self.depth -= 1;
                return Ok(Expr::Not(Box::new(inner)));
            }
            self.primary()
        }

        fn primary(&mut self) -> Result<Expr, ParseError> {
            if self.peek().tok == Tok::LParen {
                let open = self.advance();
                self.nest(&open)?;
                let inner = self.or()?;
                self.depth -= 1;
                let close = self.advance();
                if close.tok != Tok::RParen {
                    return Err(error(
                        close.at,
                        format!(
                            "expected ')' to close the '(' at position {}, found {}",
                            open.at + 1,
                            shown(&close)
                        ),
                    ));
                }
                return Ok(inner);
            }
            let left_token = self.peek().clone();
            let left = self.operand(None)?;
            let op = match self.peek().tok {
                Tok::Op(op) => op,
                _ => {
                    return match left {
                        Operand::Field(field) => Ok(Expr::Present(field)),
                        Operand::Literal(Literal::Bool(b)) => Ok(Expr::Const(b)),
                        Operand::Literal(_) => Err(error(
                            self.peek().at,
                            format!(
                                "expected a comparison (==, !=, <, <=, >, >=, contains, \
                                 startswith, endswith) after {}, found {}",
                                shown(&left_token),
                                shown(self.peek())
                            ),
                        )),
                    };
                }
            };
            let op_token = self.advance();
            let right = self.operand(Some(&op_token))?;
            Ok(Expr::Compare(left, op, right))
        }

        fn operand(&mut self, after: Option<&Token>) -> Result<Operand, ParseError> {
            let token = self.advance();
            Ok(match token.tok.clone() {
                Tok::Path(segs, _) => Operand::Field(field(segs, &token)?),
                Tok::Str(text) => Operand::Literal(Literal::Str(text)),
                Tok::Int(n) => Operand::Literal(Literal::Int(n)),
                Tok::Float(f) => Operand::Literal(Literal::Float(f)),
                Tok::True => Operand::Literal(Literal::Bool(true)),
                Tok::False => Operand::Literal(Literal::Bool(false)),
                Tok::Null => Operand::Literal(Literal::Null),
                _ => {
                    let wanted = match after {
                        Some(op) => format!("expected a value after {}", shown(op)),
                        None => "expected a field (key, value, header.NAME, json.PATH, ...), \
                                 a value or '('"
                            .to_string(),
                    };
                    return Err(error(
                        token.at,
                        format!("{wanted}, found {}", shown(&token)),
                    ));
                }
            })
        }
    }

    impl Expr {
        pub fn parse(source: &str) -> Result<Expr, ParseError> {
            let tokens = lex(source)?;
            if tokens.len() == 1 {
                return Err(error(0, "the expression is empty"));
            }
            let mut parser = Parser {
                tokens,
                at: 0,
                depth: 0,
            };
            let expr = parser.or()?;
            let rest = parser.peek();
            if rest.tok != Tok::End {
                let message = if rest.tok == Tok::RParen {
                    "this ')' closes nothing".to_string()
                } else {
                    format!("expected && or || before {}", shown(rest))
                };
                return Err(error(rest.at, message));
            }
            Ok(expr)
        }

        pub fn matches(&self, record: &Record<'_>) -> bool {
            match self {
                Expr::Or(a, b) => a.matches(record) || b.matches(record),
                Expr::And(a, b) => a.matches(record) && b.matches(record),
                Expr::Not(inner) => !inner.matches(record),
                Expr::Compare(left, op, right) => {
                    compare(&operand(left, record), *op, &operand(right, record))
                }
                Expr::Const(b) => *b,
                Expr::Present(field) => {
                    !matches!(field_value(field, record), Val::Null | Val::Bool(false))
                }
            }
        }
    }

    /// What an expression reads of a record.
    pub struct Record<'a> {
        pub partition: i32,
        pub offset: i64,
        pub timestamp: i64,
        pub size: usize,
        /// The key and value as text (see `Shown::text`).
        pub key: Option<&'a str>,
        pub value: Option<&'a str>,
        /// The decoded key and value, when they are JSON (or decoded to it).
        pub key_json: Option<&'a Value>,
        pub value_json: Option<&'a Value>,
        pub headers: &'a [(String, Option<String>)],
    }

    #[derive(Debug, Clone)]
    enum Val<'a> {
        Null,
        Bool(bool),
        Int(i64),
        Float(f64),
        Str(Cow<'a, str>),
        /// A JSON array or object.
        Json(&'a Value),
    }

    fn operand<'a>(operand: &'a Operand, record: &Record<'a>) -> Val<'a> {
        match operand {
            Operand::Field(field) => field_value(field, record),
            Operand::Literal(Literal::Null) => Val::Null,
            Operand::Literal(Literal::Bool(b)) => Val::Bool(*b),
            Operand::Literal(Literal::Int(n)) => Val::Int(*n),
            Operand::Literal(Literal::Float(f)) => Val::Float(*f),
            Operand::Literal(Literal::Str(s)) => Val::Str(Cow::Borrowed(s)),
        }
    }

    fn field_value<'a>(field: &'a Field, record: &Record<'a>) -> Val<'a> {
        let text = |t: Option<&'a str>| t.map_or(Val::Null, |t| Val::Str(Cow::Borrowed(t)));
        match field {
            Field::Key => text(record.key),
            Field::Value => text(record.value),
            Field::Offset => Val::Int(record.offset),
            Field::Partition => Val::Int(i64::from(record.partition)),
            Field::Timestamp => Val::Int(record.timestamp),
            Field::Size => Val::Int(record.size as i64),
            Field::Header(name) => record
                .headers
                .iter()
                .find(|(n, _)| n == name)
                .map_or(Val::Null, |(_, v)| {
                    Val::Str(Cow::Borrowed(v.as_deref().unwrap_or("")))
                }),
            Field::Json { key, path } => {
                let root = if *key {
                    record.key_json
                } else {
                    record.value_json
                };
                root.and_then(|root| walk(root, path))
                    .map_or(Val::Null, json_val)
            }
        }
    }

    fn walk<'a>(mut at: &'a Value, path: &[Seg]) -> Option<&'a Value> {
        for seg in path {
            at = match (seg, at) {
                (Seg::Name(name), Value::Object(map)) => map.get(name)?,
                (Seg::Index(i), Value::Array(items)) => items.get(*i)?,
                (Seg::Name(name), Value::Array(items)) => items.get(name.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(at)
    }

    fn json_val(value: &Value) -> Val<'_> {
        match value {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Val::Int(i),
                None => Val::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Val::Str(Cow::Borrowed(s)),
            Value::Array(_) | Value::Object(_) => Val::Json(value),
        }
    }

    /// A value as a number: numbers, and strings that read as a number or a time.
    fn number(v: &Val<'_>) -> Option<f64> {
        match v {
            Val::Int(i) => Some(*i as f64),
            Val::Float(f) => Some(*f),
            Val::Str(s) => s
                .trim()
                .parse::<f64>()
                .ok()
                .or_else(|| parse_time(s).ok().map(|ms| ms as f64)),
            _ => None,
        }
    }

    fn text<'v>(v: &'v Val<'_>) -> Option<Cow<'v, str>> {
        match v {
            Val::Null => None,
            Val::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
            Val::Int(i) => Some(Cow::Owned(i.to_string())),
            Val::Float(f) => Some(Cow::Owned(f.to_string())),
            Val::Str(s) => Some(Cow::Borrowed(s.as_ref())),
            Val::Json(json) => Some(Cow::Owned(json.to_string())),
        }
    }

    fn equal(a: &Val<'_>, b: &Val<'_>) -> bool {
        match (a, b) {
            (Val::Null, Val::Null) => true,
            (Val::Null, _) | (_, Val::Null) => false,
            (Val::Bool(x), Val::Bool(y)) => x == y,
            (Val::Int(x), Val::Int(y)) => x == y,
            (Val::Str(x), Val::Str(y)) => x == y,
            (Val::Json(x), Val::Json(y)) => x == y,
            (Val::Int(_) | Val::Float(_), _) | (_, Val::Int(_) | Val::Float(_)) => {
                matches!((number(a), number(b)), (Some(x), Some(y)) if x == y)
            }
            _ => false,
        }
    }

    fn order(a: &Val<'_>, b: &Val<'_>) -> Option<Ordering> {
        match (a, b) {
            (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
            (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
            (Val::Int(_) | Val::Float(_), _) | (_, Val::Int(_) | Val::Float(_)) => {
                number(a)?.partial_cmp(&number(b)?)
            }
            _ => None,
        }
    }

    fn compare(left: &Val<'_>, op: Op, right: &Val<'_>) -> bool {
        match op {
            Op::Eq => equal(left, right),
            Op::Ne => !equal(left, right),
            Op::Lt => order(left, right) == Some(Ordering::Less),
            Op::Le => matches!(order(left, right), Some(Ordering::Less | Ordering::Equal)),
            Op::Gt => order(left, right) == Some(Ordering::Greater),
            Op::Ge => matches!(
                order(left, right),
                Some(Ordering::Greater | Ordering::Equal)
            ),
            Op::Contains => match left {
                Val::Json(Value::Array(items)) => {
                    items.iter().any(|item| equal(&json_val(item), right))
                }
                Val::Json(Value::Object(map)) => {
                    text(right).is_some_and(|key| map.contains_key(key.as_ref()))
                }
                _ => {
                    matches!((text(left), text(right)), (Some(l), Some(r)) if l.contains(r.as_ref()))
                }
            },
            Op::StartsWith => {
                matches!((text(left), text(right)), (Some(l), Some(r)) if l.starts_with(r.as_ref()))
            }
            Op::EndsWith => {
                matches!((text(left), text(right)), (Some(l), Some(r)) if l.ends_with(r.as_ref()))
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde_json::json;

        fn record<'a>(
            key: Option<&'a str>,
            value: Option<&'a str>,
            value_json: Option<&'a Value>,
            headers: &'a [(String, Option<String>)],
        ) -> Record<'a> {
            Record {
                partition: 0,
                offset: 12,
                timestamp: 1_796_655_845_123,
                size: 40,
                key,
                value,
                key_json: None,
                value_json,
                headers,
            }
        }

        fn eval(source: &str, record: &Record<'_>) -> bool {
            Expr::parse(source)
                .unwrap_or_else(|e| panic!("{source}: {e}"))
                .matches(record)
        }

        #[test]
        fn parses_the_issue_example_with_and_binding_tighter() {
            let expr = Expr::parse(
                r#"key == "k1" && value contains "x" || header.trace-id == "abc" && offset >= 10 && partition == 0 && timestamp > 1700000000000"#,
            )
            .unwrap();
            let Expr::Or(left, right) = &expr else {
                panic!("{expr:?}");
            };
            assert!(matches!(**left, Expr::And(..)));
            assert!(matches!(**right, Expr::And(..)));
            let headers = vec![("trace-id".to_string(), Some("abc".to_string()))];
            let r = record(Some("k2"), Some("nothing"), None, &headers);
            assert!(expr.matches(&r));
            let r = record(Some("k1"), Some("an x here"), None, &[]);
            assert!(expr.matches(&r));
            let r = record(Some("k1"), Some("nothing"), None, &[]);
            assert!(!expr.matches(&r));
        }

        #[test]
        fn json_paths_compare_decoded_values() {
            let value = json!({"user": {"id": 5, "name": "ann"}, "items": [{"sku": "a"}, {"sku": "b"}],
                               "tags": ["red", "blue"], "price": 9.5, "ok": true, "none": null});
            let r = record(None, Some("{}"), Some(&value), &[]);
            assert!(eval("json.user.id == 5", &r));
            assert!(eval("value.user.id == 5", &r));
            assert!(eval("json.user.id == \"5\"", &r));
            assert!(!eval("json.user.id == 6", &r));
            assert!(eval("json.user.name startswith 'an'", &r));
            assert!(eval("json.items[1].sku == \"b\"", &r));
            assert!(eval("json.items.0.sku == \"a\"", &r));
            assert!(eval("json[\"user\"].name == 'ann'", &r));
            assert!(eval("json.tags contains \"blue\"", &r));
            assert!(!eval("json.tags contains \"green\"", &r));
            assert!(eval("json.user contains 'name'", &r));
            assert!(eval("json.price > 9 && json.price < 10.0", &r));
            assert!(eval("json.ok && !json.missing", &r));
            assert!(eval("json.none == null && json.missing == null", &r));
            assert!(!eval("json.none", &r));
            assert!(!eval("json.missing > 1", &r));
            assert!(eval("json.missing != 1", &r));
        }

        #[test]
        fn fields_keywords_and_times() {
            let headers = vec![
                ("trace-id".to_string(), Some("abc".to_string())),
                ("x.y".to_string(), None),
                ("with space".to_string(), Some("v".to_string())),
            ];
            let r = record(Some("k1"), Some("hello world"), None, &headers);
            assert!(eval("header.trace-id", &r));
            assert!(eval("header.x.y", &r));
            assert!(eval("header['with space'] == 'v'", &r));
            assert!(!eval("header.other", &r));
            assert!(eval("NOT header.other AND key == 'k1' OR false", &r));
            assert!(eval("value endswith \"world\" and size == 40", &r));
            assert!(eval("timestamp >= \"2026-12-07T15:04:05.123Z\"", &r));
            assert!(eval("timestamp < '2026-12-07T15:04:06Z'", &r));
            assert!(eval(
                "!(offset < 12) && (partition == 0 || partition == 1)",
                &r
            ));
            assert!(eval("offset >= -1 && offset <= 1.2e1", &r));
            assert!(eval("key != null && value != 'x\\'y'", &r));
        }

        #[test]
        fn errors_point_at_the_position() {
            let cases = [
                ("key = \"k\"", 5, "use =="),
                ("key == ", 8, "expected a value after '=='"),
                (
                    "(key == 'a'",
                    12,
                    "expected ')' to close the '(' at position 1",
                ),
                ("key == 'a')", 11, "closes nothing"),
                ("key == 'a' offset", 12, "expected && or || before 'offset'"),
                ("foo == 1", 1, "unknown field 'foo'"),
                ("key == 'abc", 8, "not closed"),
                ("offset > 12x", 12, "after a number"),
                ("'a' && key", 5, "expected a comparison"),
                ("key == #", 8, "unexpected character '#'"),
                ("", 1, "empty"),
                ("header == 'x'", 1, "name the header"),
                ("json.a[", 8, "expected an index"),
                ("offset.x == 1", 1, "has no fields"),
                ("key & value", 5, "use &&"),
            ];
            for (source, position, message) in cases {
                let error = Expr::parse(source).unwrap_err();
                assert_eq!(error.position, position, "{source}: {error}");
                assert!(error.message.contains(message), "{source}: {error}");
            }
            let deep = format!("{}key{}", "(".repeat(100), ")".repeat(100));
            assert!(Expr::parse(&deep).unwrap_err().message.contains("nested"));
            assert!(Expr::parse(&"!".repeat(100)).is_err());
            assert!(Expr::parse(&"a".repeat(5000)).is_err());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// What a page (or anyone) sends: never a panic, a parse error at worst.
        #[test]
        fn any_input_parses_or_is_refused(
            text in "[ -~]{0,80}|[()!&|=<>\"a-z.0-9 ]{0,200}|\\PC{0,40}"
        ) {
            let _ = expr::Expr::parse(&text);
            let _ = parse_time(&text);
            let _ = parse_positions(&text);
            let _ = parse_headers(&text);
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!("{}key == \"k\"{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(expr::Expr::parse(&deep).is_err());
        assert!(expr::Expr::parse(&"!".repeat(100_000)).is_err());
    }

    #[test]
    fn times_parse_as_utc_or_ms() {
        assert_eq!(parse_time("1796655845123"), Ok(1_796_655_845_123));
        assert_eq!(
            parse_time("2026-12-07T15:04:05.123Z"),
            Ok(1_796_655_845_123)
        );
        assert_eq!(parse_time("2026-12-07 15:04:05.123"), Ok(1_796_655_845_123));
        assert_eq!(
            parse_time("2026-12-07T16:04:05.123+01:00"),
            Ok(1_796_655_845_123)
        );
        assert_eq!(
            parse_time("2026-12-07T14:04:05.123-0100"),
            Ok(1_796_655_845_123)
        );
        assert_eq!(parse_time("2026-12-07T15:00Z"), Ok(1_796_655_600_000));
        assert_eq!(parse_time("1970-01-01"), Ok(0));
        assert_eq!(parse_time("2024-02-29T00:00:00Z"), Ok(1_709_164_800_000));
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2023-02-29",
            "2026-12-07T25:00:00Z",
            "2026-12-07T15:00:00Zjunk",
            "2026-12-07T15:00:00.Z",
            "-5",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_are_name_value_lines() {
        assert_eq!(
            parse_headers("trace-id=abc\n\n a = b=c \r\nempty=\n"),
            Ok(vec![
                ("trace-id".to_string(), "abc".to_string()),
                ("a".to_string(), " b=c ".to_string()),
                ("empty".to_string(), String::new()),
            ])
        );
        assert_eq!(parse_headers(""), Ok(vec![]));
        assert_eq!(
            parse_headers("a=1\nnot a header"),
            Err("line 2: 'not a header' is not name=value".to_string())
        );
        assert!(parse_headers("=x").unwrap_err().contains("no name"));
    }

    #[test]
    fn auto_detection_prefers_the_wire_format_then_json_then_text() {
        assert_eq!(sniff(&[0, 0, 0, 0, 7, 2, 8]), Sniffed::Framed(7));
        assert_eq!(
            sniff(br#"{"a": 1}"#),
            Sniffed::Json(json!({"a": 1}), r#"{"a": 1}"#)
        );
        assert_eq!(sniff(b"42"), Sniffed::Json(json!(42), "42"));
        assert_eq!(sniff(b"hello\tworld\n"), Sniffed::Text("hello\tworld\n"));
        assert_eq!(sniff(b"   "), Sniffed::Text("   "));
        assert_eq!(sniff(b"{not json"), Sniffed::Text("{not json"));
        assert_eq!(sniff(&[0xff, 0xfe, 0x01]), Sniffed::Binary);
        assert_eq!(sniff(b"bell\x07"), Sniffed::Binary);
        assert_eq!(sniff(&[0, 1]), Sniffed::Binary);
    }

    #[tokio::test]
    async fn decoding_without_a_registry_falls_back_to_hex_with_the_reason() {
        let mut decoder = Decoder::new(Decode::Auto, None);
        let framed = decoder.decode(Some(&[0, 0, 0, 0, 3, 1])).await;
        assert_eq!(framed.format, "hex");
        assert_eq!(framed.value, json!("000000000301"));
        assert!(framed.error.unwrap().contains("schema id 3"));
        assert_eq!(decoder.decode(None).await, Shown::null());
        let json = decoder.decode(Some(br#"{"a":[1]}"#)).await;
        assert_eq!((json.format, json.value), ("json", json!({"a": [1]})));
        let text = decoder.decode(Some(b"plain")).await;
        assert_eq!((text.format, text.text.as_deref()), ("text", Some("plain")));
        let mut forced = Decoder::new(Decode::Json, None);
        let not_json = forced.decode(Some(b"plain")).await;
        assert_eq!(not_json.format, "hex");
        assert!(not_json.error.unwrap().starts_with("not JSON"));
        let text_key = forced.decode_key(Some(b"plain")).await;
        assert_eq!((text_key.format, text_key.error), ("text", None));
        let mut avro = Decoder::new(Decode::Avro, None);
        assert!(
            avro.decode(Some(b"x"))
                .await
                .error
                .unwrap()
                .contains("wire format")
        );
        let big = vec![b'a'; DECODE_BYTES + 1];
        let shown = Decoder::new(Decode::Auto, None).decode(Some(&big)).await;
        assert!(shown.truncated && shown.error.is_some());
        assert_eq!(shown.value.as_str().map(str::len), Some(SHOW_BYTES));
    }

    #[test]
    fn browse_parameters_name_the_bad_field() {
        let bad = |query: BrowseQuery| parse_browse(query).unwrap_err().field;
        let q = |f: fn(&mut BrowseQuery)| {
            let mut query = BrowseQuery::default();
            f(&mut query);
            query
        };
        assert_eq!(
            bad(q(|q| q.partition = Some("x".into()))).as_deref(),
            Some("partition")
        );
        assert_eq!(
            bad(q(|q| q.from = Some("middle".into()))).as_deref(),
            Some("from")
        );
        assert_eq!(
            bad(q(|q| q.from = Some("offset".into()))).as_deref(),
            Some("offset")
        );
        assert_eq!(
            bad(q(|q| {
                q.from = Some("timestamp".into());
                q.timestamp = Some("soon".into());
            }))
            .as_deref(),
            Some("timestamp")
        );
        assert_eq!(
            bad(q(|q| q.limit = Some("5000".into()))).as_deref(),
            Some("limit")
        );
        assert_eq!(
            bad(q(|q| q.decode = Some("xml".into()))).as_deref(),
            Some("decode")
        );
        assert_eq!(
            bad(q(|q| q.expr = Some("key ==".into()))).as_deref(),
            Some("expr")
        );
        assert_eq!(
            bad(q(|q| q.positions = Some("0-5".into()))).as_deref(),
            Some("positions")
        );
        let ok = parse_browse(q(|q| {
            q.partition = Some("all".into());
            q.from = Some("timestamp".into());
            q.timestamp = Some("2026-12-07T15:00:00Z".into());
            q.positions = Some("0:5, 2:7".into());
            q.key = Some(String::new());
        }))
        .unwrap();
        assert_eq!(ok.start, Start::Timestamp(1_796_655_600_000));
        assert_eq!(ok.limit, DEFAULT_LIMIT);
        assert_eq!(ok.positions, BTreeMap::from([(0, 5), (2, 7)]));
        assert!(ok.filters.key.is_none() && ok.partition.is_none());
    }

    #[test]
    fn start_offsets_stay_inside_the_partition() {
        assert_eq!(start_offset(Start::Earliest, 10, 5, 100, None), 5);
        assert_eq!(start_offset(Start::Latest, 10, 5, 100, None), 90);
        assert_eq!(start_offset(Start::Latest, 10, 95, 100, None), 95);
        assert_eq!(start_offset(Start::Offset(2), 10, 5, 100, None), 5);
        assert_eq!(start_offset(Start::Offset(500), 10, 5, 100, None), 100);
        assert_eq!(start_offset(Start::Timestamp(1), 10, 5, 100, Some(42)), 42);
        assert_eq!(start_offset(Start::Timestamp(1), 10, 5, 100, Some(-1)), 100);
        assert_eq!(start_offset(Start::Earliest, 10, 0, 0, None), 0);
        let browse = |start: Start, positions: &[(i32, i64)]| Browse {
            partition: None,
            start,
            limit: 100,
            filters: Filters::default(),
            decode: Decode::Auto,
            positions: positions.iter().copied().collect(),
        };
        assert_eq!(per_partition_limit(&browse(Start::Latest, &[]), 3), 300);
        assert_eq!(
            per_partition_limit(&browse(Start::Latest, &[]), 50),
            MAX_LIMIT
        );
        assert_eq!(
            per_partition_limit(&browse(Start::Latest, &[(0, 5)]), 3),
            100
        );
        assert_eq!(per_partition_limit(&browse(Start::Earliest, &[]), 3), 100);
    }

    #[test]
    fn partitions_and_produce_errors() {
        assert_eq!(parse_partition(&Value::Null).ok(), Some(None));
        assert_eq!(parse_partition(&json!("")).ok(), Some(None));
        assert_eq!(parse_partition(&json!(2)).ok(), Some(Some(2)));
        assert_eq!(parse_partition(&json!("3")).ok(), Some(Some(3)));
        assert_eq!(
            parse_partition(&json!(-1)).unwrap_err().field.as_deref(),
            Some("produce_partition")
        );
        let too_large = ProducerError::Api(sluice_client::ApiError {
            code: sluice_client::ErrorCode(10),
            message: Some("too big".into()),
        });
        let answer = produce_error(&too_large, 10 * 1024 * 1024, Some("1048588"));
        assert_eq!(answer.field.as_deref(), Some("produce_value"));
        assert_eq!(answer.code.as_deref(), Some("MESSAGE_TOO_LARGE"));
        assert!(answer.message.contains("10.0 MiB"), "{}", answer.message);
        assert!(
            answer.message.contains("max.message.bytes"),
            "{}",
            answer.message
        );
        let local = ProducerError::RecordTooLarge {
            size_bytes: 5,
            setting: "max.request.size",
            limit_bytes: 1,
        };
        assert_eq!(
            produce_error(&local, 5, None).field.as_deref(),
            Some("produce_value")
        );
    }
}
