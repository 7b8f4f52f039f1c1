//! PostgreSQL column types as Debezium's Postgres connector maps them to Connect schemas,
//! and their text output (what both `pgoutput` and a snapshot `SELECT` send, with the
//! session settings [`SESSION_SETTINGS`] fixes) to Connect values.
//!
//! The mapping follows Debezium's documentation ("Data type mappings" of the PostgreSQL
//! connector): `decimal.handling.mode`, `time.precision.mode`, `binary.handling.mode`
//! and `interval.handling.mode` pick among its representations.

use crate::converters::decimal::BigDecimal;
use crate::data::{Schema, SchemaRef, Type, Value};

/// The settings every connection of the connector runs with, so that text output is one
/// format whatever the server's defaults: ISO dates, UTC, ISO 8601 intervals, hex bytea
/// and floats printed exactly.
pub const SESSION_SETTINGS: &[(&str, &str)] = &[
    ("DateStyle", "ISO, YMD"),
    ("TimeZone", "UTC"),
    ("IntervalStyle", "iso_8601"),
    ("extra_float_digits", "3"),
    ("bytea_output", "hex"),
];

/// `decimal.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalMode {
    Precise,
    Double,
    String,
}

/// `time.precision.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeMode {
    Adaptive,
    AdaptiveTimeMicroseconds,
    Connect,
}

/// `binary.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryMode {
    Bytes,
    Base64,
    Base64UrlSafe,
    Hex,
}

/// `interval.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalMode {
    Numeric,
    String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes {
    pub decimal: DecimalMode,
    pub time: TimeMode,
    pub binary: BinaryMode,
    pub interval: IntervalMode,
}

impl Default for Modes {
    fn default() -> Modes {
        Modes {
            decimal: DecimalMode::Precise,
            time: TimeMode::Adaptive,
            binary: BinaryMode::Bytes,
            interval: IntervalMode::Numeric,
        }
    }
}

/// A column's type as the catalog describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct PgType {
    pub oid: u32,
    /// `atttypmod`: length, precision and scale, or -1.
    pub modifier: i32,
    /// `pg_type.typname` (`int4`, `_text`, a user enum's name).
    pub name: String,
    /// The labels of an enum type, in their sort order.
    pub enum_labels: Option<Vec<String>>,
    /// An array's element type.
    pub element: Option<Box<PgType>>,
}

/// How a type's values are read, once its schema is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    /// numeric(p, s), money: a Decimal of that scale (or double / string).
    Decimal(i32),
    /// numeric without a scale.
    VariableDecimal,
    Text,
    Bytes,
    Date,
    /// time, in milliseconds (`io.debezium.time.Time`, Connect's Time).
    TimeMillis,
    TimeMicros,
    TimestampMillis,
    TimestampMicros,
    ZonedTimestamp,
    ZonedTime,
    IntervalMicros,
    IntervalString,
    Money,
    Bit1,
    Array,
}

/// Debezium's logical type names.
pub const JSON: &str = "io.debezium.data.Json";
pub const UUID: &str = "io.debezium.data.Uuid";
pub const XML: &str = "io.debezium.data.Xml";
pub const ENUM: &str = "io.debezium.data.Enum";
pub const VARIABLE_SCALE_DECIMAL: &str = "io.debezium.data.VariableScaleDecimal";
pub const DATE: &str = "io.debezium.time.Date";
pub const TIME: &str = "io.debezium.time.Time";
pub const MICRO_TIME: &str = "io.debezium.time.MicroTime";
pub const TIMESTAMP: &str = "io.debezium.time.Timestamp";
pub const MICRO_TIMESTAMP: &str = "io.debezium.time.MicroTimestamp";
pub const ZONED_TIMESTAMP: &str = "io.debezium.time.ZonedTimestamp";
pub const ZONED_TIME: &str = "io.debezium.time.ZonedTime";
pub const MICRO_DURATION: &str = "io.debezium.time.MicroDuration";
pub const INTERVAL: &str = "io.debezium.time.Interval";
pub const PRECISION: &str = "connect.decimal.precision";

/// A column type mapped: its Connect schema (not yet optional) and how to read values.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub schema: Schema,
    kind: Kind,
    element: Option<Box<Mapped>>,
}

/// Typmod decoding, as `format_type` does it.
fn precision(modifier: i32) -> Option<(i32, i32)> {
    (modifier >= 4).then(|| {
        let m = modifier - 4;
        ((m >> 16) & 0xffff, m & 0xffff)
    })
}

fn fractional_digits(modifier: i32) -> i32 {
    if modifier < 0 { 6 } else { modifier }
}

fn logical(ty: Type, name: &str) -> Schema {
    Schema::new(ty).named(name).with_version(1)
}

fn decimal_schema(modes: &Modes, scale: i32, precision: Option<i32>) -> (Schema, Kind) {
    match modes.decimal {
        DecimalMode::Precise => {
            let mut s = Schema::decimal(scale);
            if let Some(p) = precision {
                s = s.with_parameter(PRECISION, p.to_string());
            }
            (s, Kind::Decimal(scale))
        }
        DecimalMode::Double => (Schema::new(Type::Float64), Kind::Decimal(scale)),
        DecimalMode::String => (Schema::new(Type::String), Kind::Decimal(scale)),
    }
}

/// Maps a column type; `None` for a type Debezium does not know (its
/// `include.unknown.datatypes=false` leaves such columns out).
pub fn map(ty: &PgType, modes: &Modes) -> Option<Mapped> {
    let plain = |t: Type, kind: Kind| (Schema::new(t), kind);
    let (schema, kind) = match ty.name.as_str() {
        "bool" => plain(Type::Boolean, Kind::Bool),
        "int2" => plain(Type::Int16, Kind::Int16),
        "int4" => plain(Type::Int32, Kind::Int32),
        "int8" | "oid" => plain(Type::Int64, Kind::Int64),
        "float4" => plain(Type::Float32, Kind::Float32),
        "float8" => plain(Type::Float64, Kind::Float64),
        "numeric" => match precision(ty.modifier) {
            Some((p, s)) => decimal_schema(modes, s, Some(p)),
            None => match modes.decimal {
                DecimalMode::Precise => (
                    logical(Type::Struct, VARIABLE_SCALE_DECIMAL)
                        .with_doc("Variable scaled decimal")
                        .field("scale", Schema::new(Type::Int32))
                        .field("value", Schema::new(Type::Bytes)),
                    Kind::VariableDecimal,
                ),
                DecimalMode::Double => plain(Type::Float64, Kind::VariableDecimal),
                DecimalMode::String => plain(Type::String, Kind::VariableDecimal),
            },
        },
        "money" => {
            let (s, _) = decimal_schema(modes, 2, None);
            (s, Kind::Money)
        }
        "char" | "bpchar" | "varchar" | "text" | "name" | "citext" | "inet" | "cidr"
        | "macaddr" | "macaddr8" | "ltree" | "tsvector" => plain(Type::String, Kind::Text),
        "json" | "jsonb" => (logical(Type::String, JSON), Kind::Text),
        "uuid" => (logical(Type::String, UUID), Kind::Text),
        "xml" => (logical(Type::String, XML), Kind::Text),
        "bytea" => match modes.binary {
            BinaryMode::Bytes => plain(Type::Bytes, Kind::Bytes),
            _ => plain(Type::String, Kind::Bytes),
        },
        "date" => match modes.time {
            TimeMode::Connect => (Schema::date(), Kind::Date),
            _ => (logical(Type::Int32, DATE), Kind::Date),
        },
        "time" => {
            let digits = fractional_digits(ty.modifier);
            match modes.time {
                TimeMode::Connect => (Schema::time(), Kind::TimeMillis),
                TimeMode::Adaptive if digits <= 3 => (logical(Type::Int32, TIME), Kind::TimeMillis),
                _ => (logical(Type::Int64, MICRO_TIME), Kind::TimeMicros),
            }
        }
        "timestamp" => {
            let digits = fractional_digits(ty.modifier);
            match modes.time {
                TimeMode::Connect => (Schema::timestamp(), Kind::TimestampMillis),
                _ if digits <= 3 => (logical(Type::Int64, TIMESTAMP), Kind::TimestampMillis),
                _ => (logical(Type::Int64, MICRO_TIMESTAMP), Kind::TimestampMicros),
            }
        }
        "timestamptz" => (logical(Type::String, ZONED_TIMESTAMP), Kind::ZonedTimestamp),
        "timetz" => (logical(Type::String, ZONED_TIME), Kind::ZonedTime),
        "interval" => match modes.interval {
            IntervalMode::Numeric => (logical(Type::Int64, MICRO_DURATION), Kind::IntervalMicros),
            IntervalMode::String => (logical(Type::String, INTERVAL), Kind::IntervalString),
        },
        "bit" if ty.modifier == 1 => plain(Type::Boolean, Kind::Bit1),
        _ => {
            if let Some(labels) = &ty.enum_labels {
                (
                    logical(Type::String, ENUM).with_parameter("allowed", labels.join(",")),
                    Kind::Text,
                )
            } else if let Some(element) = &ty.element {
                let element = map(element, modes)?;
                let schema = Schema::array(element.schema.clone().optional());
                return Some(Mapped {
                    schema,
                    kind: Kind::Array,
                    element: Some(Box::new(element)),
                });
            } else {
                return None;
            }
        }
    };
    Some(Mapped {
        schema,
        kind,
        element: None,
    })
}

fn bad<T>(what: &str, text: &str) -> Result<T, String> {
    Err(format!("cannot read {text:?} as {what}"))
}

fn parse<T: std::str::FromStr>(what: &str, text: &str) -> Result<T, String> {
    text.parse().or_else(|_| bad(what, text))
}

fn float(what: &str, text: &str) -> Result<f64, String> {
    match text {
        "NaN" => Ok(f64::NAN),
        "Infinity" => Ok(f64::INFINITY),
        "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => parse(what, text),
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD` (with ` BC` for years before 1) to days since the epoch.
fn date_days(text: &str) -> Result<i64, String> {
    let (body, bc) = match text.strip_suffix(" BC") {
        Some(b) => (b, true),
        None => (text, false),
    };
    let mut parts = body.splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (parts.next(), parts.next(), parts.next()) else {
        return bad("a date", text);
    };
    let y: i64 = parse("a date", y)?;
    let y = if bc { 1 - y } else { y };
    let m: i64 = parse("a date", m)?;
    let d: i64 = parse("a date", d)?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return bad("a date", text);
    }
    Ok(days_from_civil(y, m, d))
}

/// `HH:MM:SS[.ffffff]` to microseconds since midnight (`24:00:00` included).
fn time_micros(text: &str) -> Result<i64, String> {
    let (hms, fraction) = match text.split_once('.') {
        Some((a, b)) => (a, b),
        None => (text, ""),
    };
    let mut parts = hms.splitn(3, ':');
    let (Some(h), Some(m), Some(s)) = (parts.next(), parts.next(), parts.next()) else {
        return bad("a time", text);
    };
    let h: i64 = parse("a time", h)?;
    let m: i64 = parse("a time", m)?;
    let s: i64 = parse("a time", s)?;
    if fraction.len() > 6 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return bad("a time", text);
    }
    let micros: i64 = if fraction.is_empty() {
        0
    } else {
        parse::<i64>("a time", fraction)? * 10i64.pow(6 - fraction.len() as u32)
    };
    Ok(((h * 60 + m) * 60 + s) * 1_000_000 + micros)
}

/// Splits a time-of-day with a zone offset (`10:00:00.5+02`, `10:00:00-03:30`) into
/// the local time and the offset in seconds east of UTC.
fn split_offset(text: &str) -> Result<(&str, i64), String> {
    let Some(at) = text.rfind(['+', '-']) else {
        return bad("a time with a zone", text);
    };
    let (local, zone) = text.split_at(at);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let mut parts = zone[1..].split(':');
    let h: i64 = parse("a zone offset", parts.next().unwrap_or(""))?;
    let m: i64 = parts.next().map_or(Ok(0), |m| parse("a zone offset", m))?;
    let s: i64 = parts.next().map_or(Ok(0), |s| parse("a zone offset", s))?;
    Ok((local, sign * (h * 3600 + m * 60 + s)))
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` to microseconds since the epoch.
fn timestamp_micros(text: &str) -> Result<i64, String> {
    let (body, bc) = match text.strip_suffix(" BC") {
        Some(b) => (b, true),
        None => (text, false),
    };
    let Some((date, time)) = body.split_once(' ') else {
        return bad("a timestamp", text);
    };
    let date = if bc {
        format!("{date} BC")
    } else {
        date.to_string()
    };
    Ok(date_days(&date)? * 86_400_000_000 + time_micros(time)?)
}

/// Civil date and time of microseconds since the epoch.
pub(crate) fn civil(micros: i64) -> (i64, i64, i64, i64, i64, i64, i64) {
    let days = micros.div_euclid(86_400_000_000);
    let rest = micros.rem_euclid(86_400_000_000);
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let secs = rest / 1_000_000;
    (
        y,
        m,
        d,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        rest % 1_000_000,
    )
}

/// Java's `ISO_LOCAL_TIME` fraction: as many digits as needed, none for zero.
fn fraction(micros: i64) -> String {
    if micros == 0 {
        return String::new();
    }
    let digits = format!("{micros:06}");
    format!(".{}", digits.trim_end_matches('0'))
}

/// Debezium's `ZonedTimestamp` of a Postgres `timestamptz`: the instant in UTC, ISO 8601
/// with six fraction digits (`2024-01-15T10:15:30.500000Z`).
pub fn zoned_timestamp(micros: i64) -> String {
    let (y, m, d, h, mi, s, us) = civil(micros);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}Z")
}

/// ISO 8601 intervals (`P1Y2M3DT4H5M6.5S`, parts may be negative) to microseconds, as
/// Debezium's `MicroDuration` counts them (a month is 365.25 / 12 days).
fn interval_micros(text: &str) -> Result<i64, String> {
    let Some(body) = text.strip_prefix('P') else {
        return bad("an interval", text);
    };
    let (mut years, mut months, mut days, mut hours, mut minutes) = (0f64, 0f64, 0f64, 0f64, 0f64);
    let mut seconds = 0f64;
    let mut in_time = false;
    let mut number = String::new();
    for c in body.chars() {
        match c {
            'T' => in_time = true,
            '0'..='9' | '.' | '-' | '+' => number.push(c),
            unit => {
                let n: f64 = parse("an interval", &number)?;
                number.clear();
                match (in_time, unit) {
                    (false, 'Y') => years = n,
                    (false, 'M') => months = n,
                    (false, 'W') => days += n * 7.0,
                    (false, 'D') => days += n,
                    (true, 'H') => hours = n,
                    (true, 'M') => minutes = n,
                    (true, 'S') => seconds = n,
                    _ => return bad("an interval", text),
                }
            }
        }
    }
    if !number.is_empty() {
        return bad("an interval", text);
    }
    let days = (years * 12.0 + months) * (365.25 / 12.0) + days;
    let seconds = ((days * 24.0 + hours) * 60.0 + minutes) * 60.0 + seconds;
    Ok((seconds * 1e6) as i64)
}

fn hex_bytes(text: &str) -> Result<Vec<u8>, String> {
    let Some(hex) = text.strip_prefix("\\x") else {
        return bad("bytea in hex", text);
    };
    if hex.len() % 2 != 0 {
        return bad("bytea in hex", text);
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).or_else(|_| bad("bytea in hex", text)))
        .collect()
}

fn decimal_value(modes: &Modes, text: &str, scale: Option<i32>) -> Result<Value, String> {
    match modes.decimal {
        DecimalMode::Double => Ok(Value::Float64(float("a number", text)?)),
        DecimalMode::String => Ok(Value::String(text.to_string())),
        DecimalMode::Precise => {
            let Some(d) = BigDecimal::parse(text) else {
                // NaN and infinities have no Decimal: Debezium writes null.
                return Ok(Value::Null);
            };
            match scale {
                Some(scale) => {
                    let d = d
                        .rescale(scale)
                        .ok_or_else(|| format!("cannot rescale {text}"))?;
                    Ok(Value::Bytes(d.unscaled.to_twos_complement()))
                }
                None => {
                    let schema: SchemaRef = map(
                        &PgType {
                            oid: 1700,
                            modifier: -1,
                            name: "numeric".into(),
                            enum_labels: None,
                            element: None,
                        },
                        modes,
                    )
                    .expect("numeric maps")
                    .schema
                    .into();
                    let mut s = crate::data::Struct::new(schema);
                    s.put("scale", Value::Int32(d.scale)).map_err(|e| e.0)?;
                    s.put("value", Value::Bytes(d.unscaled.to_twos_complement()))
                        .map_err(|e| e.0)?;
                    Ok(Value::Struct(s))
                }
            }
        }
    }
}

/// Splits a one-dimensional array literal (`{1,2}`, `{"a b",NULL}`) into its elements'
/// texts (`None` for NULL).
fn array_elements(text: &str) -> Result<Vec<Option<String>>, String> {
    // A lower bound other than 1 prefixes the literal: `[0:1]={1,2}`.
    let text = match text.split_once('=') {
        Some((bounds, rest)) if bounds.starts_with('[') => rest,
        _ => text,
    };
    let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) else {
        return bad("an array", text);
    };
    let mut out = Vec::new();
    if inner.is_empty() {
        return Ok(out);
    }
    let mut chars = inner.chars().peekable();
    loop {
        let mut element = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => match chars.next() {
                        Some(c) => element.push(c),
                        None => return bad("an array", text),
                    },
                    Some('"') => break,
                    Some(c) => element.push(c),
                    None => return bad("an array", text),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' {
                    return Err(format!(
                        "multi-dimensional arrays are not supported: {text:?}"
                    ));
                }
                element.push(c);
                chars.next();
            }
        }
        out.push(if !quoted && element.eq_ignore_ascii_case("NULL") {
            None
        } else {
            Some(element)
        });
        match chars.next() {
            Some(',') => continue,
            None => break,
            Some(_) => return bad("an array", text),
        }
    }
    Ok(out)
}

/// The literal of a column default (`'new'::state`, `42`, `(-1.5)`, `true`), as text
/// the type's reader takes; `None` for an expression (`nextval(...)`, `now()`).
pub fn default_literal(expression: &str) -> Option<String> {
    let e = expression.trim();
    // A sequence's next value: Debezium's schema says 0.
    if e.starts_with("nextval(") {
        return Some("0".into());
    }
    let e = e
        .strip_prefix('(')
        .and_then(|e| e.strip_suffix(')'))
        .unwrap_or(e);
    if let Some(rest) = e.strip_prefix('\'') {
        let mut text = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    text.push('\'');
                    continue;
                }
                let tail: String = chars.collect();
                // Only a cast may follow the literal (`::character varying`), not an
                // operator.
                let cast = tail.strip_prefix("::").is_some_and(|t| {
                    t.chars()
                        .all(|c| c.is_ascii_alphanumeric() || " _.\"[]()".contains(c))
                });
                return (tail.is_empty() || cast).then_some(text);
            }
            text.push(c);
        }
        return None;
    }
    let literal = e.split("::").next().unwrap_or(e).trim();
    let numeric = literal
        .strip_prefix('-')
        .unwrap_or(literal)
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.');
    if !literal.is_empty() && numeric {
        return Some(literal.to_string());
    }
    match literal {
        "true" => Some("t".into()),
        "false" => Some("f".into()),
        _ => None,
    }
}

impl Mapped {
    /// What Debezium writes for a NOT NULL column that has no value (a key-only old
    /// row): the type's zero (`JdbcValueConverters`' fallbacks).
    pub fn fallback(&self) -> Value {
        match self.kind {
            Kind::Bool | Kind::Bit1 => Value::Boolean(false),
            Kind::Int16 => Value::Int16(0),
            Kind::Int32 | Kind::Date | Kind::TimeMillis => Value::Int32(0),
            Kind::Int64
            | Kind::TimeMicros
            | Kind::TimestampMillis
            | Kind::TimestampMicros
            | Kind::IntervalMicros => Value::Int64(0),
            Kind::Float32 => Value::Float32(0.0),
            Kind::Float64 => Value::Float64(0.0),
            Kind::Decimal(_) | Kind::Money | Kind::VariableDecimal => match self.schema.ty {
                Type::Float64 => Value::Float64(0.0),
                Type::String => Value::String("0".into()),
                Type::Bytes => Value::Bytes(vec![0]),
                _ => {
                    let mut s = crate::data::Struct::new(self.schema.clone().into());
                    s.values[0] = Value::Int32(0);
                    s.values[1] = Value::Bytes(vec![0]);
                    Value::Struct(s)
                }
            },
            Kind::ZonedTimestamp => Value::String("1970-01-01T00:00:00Z".into()),
            Kind::ZonedTime => Value::String("00:00:00Z".into()),
            Kind::Bytes => match self.schema.ty {
                Type::Bytes => Value::Bytes(Vec::new()),
                _ => Value::String(String::new()),
            },
            Kind::Text | Kind::IntervalString => Value::String(String::new()),
            Kind::Array => Value::Array(Vec::new()),
        }
    }

    /// Reads a value from the type's text output.
    pub fn value(&self, text: &str, modes: &Modes) -> Result<Value, String> {
        Ok(match self.kind {
            Kind::Bool | Kind::Bit1 => match text {
                "t" | "1" => Value::Boolean(true),
                "f" | "0" => Value::Boolean(false),
                _ => return bad("a boolean", text),
            },
            Kind::Int16 => Value::Int16(parse("smallint", text)?),
            Kind::Int32 => Value::Int32(parse("integer", text)?),
            Kind::Int64 => Value::Int64(parse("bigint", text)?),
            Kind::Float32 => Value::Float32(float("real", text)? as f32),
            Kind::Float64 => Value::Float64(float("double precision", text)?),
            Kind::Decimal(scale) => decimal_value(modes, text, Some(scale))?,
            Kind::VariableDecimal => decimal_value(modes, text, None)?,
            Kind::Money => {
                let negative = text.starts_with('-') || text.starts_with('(');
                let digits: String = text
                    .chars()
                    .filter(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let text = if negative {
                    format!("-{digits}")
                } else {
                    digits
                };
                decimal_value(modes, &text, Some(2))?
            }
            Kind::Text => Value::String(text.to_string()),
            Kind::Bytes => {
                let bytes = hex_bytes(text)?;
                match modes.binary {
                    BinaryMode::Bytes => Value::Bytes(bytes),
                    BinaryMode::Hex => {
                        Value::String(bytes.iter().map(|b| format!("{b:02x}")).collect())
                    }
                    BinaryMode::Base64 => {
                        use base64::Engine;
                        Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
                    }
                    BinaryMode::Base64UrlSafe => {
                        use base64::Engine;
                        Value::String(base64::engine::general_purpose::URL_SAFE.encode(bytes))
                    }
                }
            }
            Kind::Date => {
                Value::Int32(i32::try_from(date_days(text)?).or_else(|_| bad("a date", text))?)
            }
            Kind::TimeMillis => Value::Int32((time_micros(text)? / 1000) as i32),
            Kind::TimeMicros => Value::Int64(time_micros(text)?),
            Kind::TimestampMillis => Value::Int64(timestamp_micros(text)?.div_euclid(1000)),
            Kind::TimestampMicros => Value::Int64(timestamp_micros(text)?),
            // Debezium passes PostgreSQL's infinities through as text.
            Kind::ZonedTimestamp if text == "infinity" || text == "-infinity" => {
                Value::String(text.to_string())
            }
            Kind::ZonedTimestamp => {
                let (local, offset) = split_offset(text)?;
                Value::String(zoned_timestamp(
                    timestamp_micros(local)? - offset * 1_000_000,
                ))
            }
            Kind::ZonedTime => {
                let (local, offset) = split_offset(text)?;
                let micros = (time_micros(local)? - offset * 1_000_000).rem_euclid(86_400_000_000);
                let (_, _, _, h, m, s, us) = civil(micros);
                Value::String(format!("{h:02}:{m:02}:{s:02}{}Z", fraction(us)))
            }
            Kind::IntervalMicros => Value::Int64(interval_micros(text)?),
            Kind::IntervalString => Value::String(text.to_string()),
            Kind::Array => {
                let element = self.element.as_ref().expect("arrays have an element");
                let mut values = Vec::new();
                for e in array_elements(text)? {
                    values.push(match e {
                        None => Value::Null,
                        Some(t) => element.value(&t, modes)?,
                    });
                }
                Value::Array(values)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(name: &str, modifier: i32) -> PgType {
        PgType {
            oid: 0,
            modifier,
            name: name.into(),
            enum_labels: None,
            element: None,
        }
    }

    fn read(t: &PgType, text: &str) -> Value {
        let modes = Modes::default();
        map(t, &modes).unwrap().value(text, &modes).unwrap()
    }

    #[test]
    fn numeric_with_a_scale_is_a_connect_decimal_with_its_precision() {
        let m = map(&ty("numeric", ((10 << 16) | 2) + 4), &Modes::default()).unwrap();
        assert_eq!(m.schema.name.as_deref(), Some(crate::data::DECIMAL));
        assert_eq!(
            m.schema.parameters.get("scale").map(String::as_str),
            Some("2")
        );
        assert_eq!(
            m.schema.parameters.get(PRECISION).map(String::as_str),
            Some("10")
        );
        // 12345 = 0x3039; -1.5 at scale 2 is -150 = 0xff6a.
        assert_eq!(
            m.value("123.45", &Modes::default()).unwrap(),
            Value::Bytes(vec![0x30, 0x39])
        );
        assert_eq!(
            m.value("-1.5", &Modes::default()).unwrap(),
            Value::Bytes(vec![0xff, 0x6a])
        );
    }

    #[test]
    fn numeric_without_a_scale_is_a_variable_scale_decimal() {
        let Value::Struct(s) = read(&ty("numeric", -1), "3.14159") else {
            panic!("not a struct");
        };
        assert_eq!(s.get("scale"), Some(&Value::Int32(5)));
        assert_eq!(s.get("value"), Some(&Value::Bytes(vec![0x04, 0xcb, 0x2f])));
    }

    #[test]
    fn dates_times_and_timestamps_count_from_the_epoch() {
        assert_eq!(read(&ty("date", -1), "2024-01-15"), Value::Int32(19_737));
        assert_eq!(read(&ty("date", -1), "1969-12-31"), Value::Int32(-1));
        assert_eq!(
            read(&ty("time", -1), "10:15:30.5"),
            Value::Int64(36_930_500_000)
        );
        assert_eq!(read(&ty("time", 3), "10:15:30.5"), Value::Int32(36_930_500));
        assert_eq!(
            read(&ty("timestamp", -1), "2024-01-15 10:15:30.123456"),
            Value::Int64(1_705_313_730_123_456)
        );
        assert_eq!(
            read(&ty("timestamp", 0), "1969-12-31 23:59:59"),
            Value::Int64(-1000)
        );
    }

    #[test]
    fn zoned_values_are_written_in_utc() {
        assert_eq!(
            read(&ty("timestamptz", -1), "2024-01-15 10:15:30.5+02"),
            Value::String("2024-01-15T08:15:30.500000Z".into())
        );
        assert_eq!(
            read(&ty("timestamptz", -1), "2024-01-15 00:00:00+00"),
            Value::String("2024-01-15T00:00:00.000000Z".into())
        );
        assert_eq!(
            read(&ty("timestamptz", -1), "infinity"),
            Value::String("infinity".into())
        );
        assert_eq!(
            read(&ty("timetz", -1), "01:00:00-03:30"),
            Value::String("04:30:00Z".into())
        );
    }

    #[test]
    fn intervals_count_a_month_as_debezium_does() {
        assert_eq!(
            read(&ty("interval", -1), "P1D"),
            Value::Int64(86_400_000_000)
        );
        assert_eq!(
            read(&ty("interval", -1), "PT1H30M0.5S"),
            Value::Int64(5_400_500_000)
        );
        assert_eq!(
            read(&ty("interval", -1), "P1M"),
            Value::Int64((365.25 / 12.0 * 86_400.0 * 1e6) as i64)
        );
        assert_eq!(
            read(&ty("interval", -1), "P-1D"),
            Value::Int64(-86_400_000_000)
        );
    }

    #[test]
    fn arrays_enums_bytes_and_json() {
        let mut ints = ty("_int4", -1);
        ints.element = Some(Box::new(ty("int4", -1)));
        assert_eq!(
            read(&ints, "{1,NULL,3}"),
            Value::Array(vec![Value::Int32(1), Value::Null, Value::Int32(3)])
        );
        let mut texts = ty("_text", -1);
        texts.element = Some(Box::new(ty("text", -1)));
        assert_eq!(
            read(&texts, r#"{"a b","say \"hi\"",NULL,"NULL"}"#),
            Value::Array(vec![
                Value::String("a b".into()),
                Value::String("say \"hi\"".into()),
                Value::Null,
                Value::String("NULL".into())
            ])
        );
        let mut mood = ty("mood", -1);
        mood.enum_labels = Some(vec!["sad".into(), "ok".into()]);
        let m = map(&mood, &Modes::default()).unwrap();
        assert_eq!(m.schema.name.as_deref(), Some(ENUM));
        assert_eq!(
            m.schema.parameters.get("allowed").map(String::as_str),
            Some("sad,ok")
        );
        assert_eq!(
            read(&ty("bytea", -1), "\\x00ff"),
            Value::Bytes(vec![0, 255])
        );
        let j = map(&ty("jsonb", -1), &Modes::default()).unwrap();
        assert_eq!(j.schema.name.as_deref(), Some(JSON));
        assert!(map(&ty("geometry", -1), &Modes::default()).is_none());
    }

    #[test]
    fn column_defaults_are_read_when_they_are_literals() {
        assert_eq!(default_literal("'new'::state").as_deref(), Some("new"));
        assert_eq!(default_literal("'it''s'::text").as_deref(), Some("it's"));
        assert_eq!(default_literal("42").as_deref(), Some("42"));
        assert_eq!(default_literal("'-1.5'::numeric").as_deref(), Some("-1.5"));
        assert_eq!(default_literal("(-1)").as_deref(), Some("-1"));
        assert_eq!(default_literal("true").as_deref(), Some("t"));
        assert_eq!(
            default_literal("nextval('t_id_seq'::regclass)").as_deref(),
            Some("0")
        );
        assert_eq!(default_literal("now()"), None);
        assert_eq!(default_literal("'a'::text || 'b'::text"), None);
    }

    #[test]
    fn malformed_text_is_an_error_not_a_panic() {
        let modes = Modes::default();
        for (t, text) in [
            ("date", "2024-13-01"),
            ("date", "x"),
            ("time", "10:00"),
            ("timestamp", "2024-01-01"),
            ("timestamptz", "2024-01-01 10:00:00"),
            ("interval", "P1"),
            ("interval", "1 day"),
            ("bytea", "\\x0"),
            ("int4", "1.5"),
        ] {
            let m = map(&ty(t, -1), &modes).unwrap();
            assert!(m.value(text, &modes).is_err(), "{t} {text:?} was read");
        }
        let mut ints = ty("_int4", -1);
        ints.element = Some(Box::new(ty("int4", -1)));
        let m = map(&ints, &modes).unwrap();
        for text in ["{1,2", "{\"1}", "{{1},{2}}", "1,2"] {
            assert!(m.value(text, &modes).is_err(), "{text:?} was read");
        }
    }
}
