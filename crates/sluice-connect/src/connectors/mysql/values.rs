//! MySQL/MariaDB column types as Debezium's MySQL connector maps them to Connect
//! schemas, and their values to Connect values from both places they come from: a
//! snapshot `SELECT` (the text protocol, with the session in UTC and utf8mb4) and the
//! binlog's row images (as `mysql_common` decodes them).
//!
//! The mapping follows Debezium's documentation ("Data type mappings" of the MySQL
//! connector) and what Debezium 2.6/2.7 wrote for MariaDB 10.11, recorded in
//! `docs/design/debezium-mariadb-events.md` §7.

use mysql_async::Value as MyValue;

use super::config::{Modes, TimeMode, UnsignedMode};
use super::ddl;
use crate::connectors::postgres::values::{BinaryMode, DecimalMode, civil, days_from_civil};
use crate::converters::decimal::BigDecimal;
use crate::data::{Schema, Type, Value};

/// How a column's values are read, once its schema is known.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// An integer of `bits` width into a Connect int of `ty`; `unsigned` reinterprets
    /// what the binlog decoded as signed.
    Int {
        ty: Type,
        bits: u32,
        unsigned: bool,
    },
    /// BIGINT UNSIGNED as a Decimal of scale 0.
    UnsignedDecimal,
    Float32,
    Float64,
    Decimal {
        scale: i32,
    },
    Bool,
    /// BIT(n), n > 1: little-endian bytes, ⌈n/8⌉ of them.
    Bits {
        bytes: usize,
    },
    Text,
    /// Binary strings; BINARY(n) is zero-padded to n.
    Binary {
        pad: Option<usize>,
    },
    Enum(Vec<String>),
    Set(Vec<String>),
    Year,
    /// Days since the epoch (`io.debezium.time.Date` or Connect's Date).
    Date,
    TimeMicros,
    /// Connect's Time: milliseconds of the day.
    TimeMillis,
    TimestampMillis,
    TimestampMicros,
    /// TIMESTAMP(fsp): an instant, ISO 8601 in UTC.
    Zoned {
        fsp: usize,
    },
}

/// A column type mapped: its Connect schema (not yet optional, no default) and how to
/// read its values.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub schema: Schema,
    kind: Kind,
}

pub const ENUM: &str = "io.debezium.data.Enum";
pub const ENUM_SET: &str = "io.debezium.data.EnumSet";
pub const BITS: &str = "io.debezium.data.Bits";
pub const JSON: &str = "io.debezium.data.Json";
pub const YEAR: &str = "io.debezium.time.Year";
pub const DATE: &str = "io.debezium.time.Date";
pub const MICRO_TIME: &str = "io.debezium.time.MicroTime";
pub const TIMESTAMP: &str = "io.debezium.time.Timestamp";
pub const MICRO_TIMESTAMP: &str = "io.debezium.time.MicroTimestamp";
pub const ZONED_TIMESTAMP: &str = "io.debezium.time.ZonedTimestamp";
const PRECISION: &str = "connect.decimal.precision";

fn logical(ty: Type, name: &str) -> Schema {
    Schema::new(ty).named(name).with_version(1)
}

fn decimal_schema(modes: &Modes, scale: i32, precision: i32) -> (Schema, Kind) {
    match modes.decimal {
        DecimalMode::Precise => (
            Schema::decimal(scale).with_parameter(PRECISION, precision.to_string()),
            Kind::Decimal { scale },
        ),
        DecimalMode::Double => (Schema::new(Type::Float64), Kind::Decimal { scale }),
        DecimalMode::String => (Schema::new(Type::String), Kind::Decimal { scale }),
    }
}

fn binary_schema(modes: &Modes) -> Schema {
    match modes.binary {
        BinaryMode::Bytes => Schema::new(Type::Bytes),
        _ => Schema::new(Type::String),
    }
}

/// The base type of a column (`INT UNSIGNED` → `INT`).
fn base_type(column: &ddl::Column) -> &str {
    column
        .type_name
        .strip_suffix(" UNSIGNED")
        .unwrap_or(&column.type_name)
}

/// Debezium's schema for a column, or `None` for a type it leaves out (spatial types,
/// which Sluice's connector does not capture yet).
pub fn map(column: &ddl::Column, modes: &Modes) -> Option<Mapped> {
    let plain = |ty: Type, kind: Kind| (Schema::new(ty), kind);
    let int = |ty: Type, bits: u32| {
        plain(
            ty,
            Kind::Int {
                ty,
                bits,
                unsigned: column.unsigned,
            },
        )
    };
    let unsigned = column.unsigned;
    let fsp = column.length.unwrap_or(0).clamp(0, 6) as usize;
    let (schema, kind) = match base_type(column) {
        "BOOL" | "BOOLEAN" => int(Type::Int16, 8),
        "TINYINT" | "INT1" => int(Type::Int16, 8),
        "SMALLINT" | "INT2" if unsigned => int(Type::Int32, 16),
        "SMALLINT" | "INT2" => int(Type::Int16, 16),
        "MEDIUMINT" | "INT3" | "MIDDLEINT" => int(Type::Int32, 24),
        "INT" | "INTEGER" | "INT4" if unsigned => int(Type::Int64, 32),
        "INT" | "INTEGER" | "INT4" => int(Type::Int32, 32),
        "BIGINT" | "INT8" if unsigned && modes.bigint_unsigned == UnsignedMode::Precise => (
            Schema::decimal(0).with_parameter(PRECISION, "20"),
            Kind::UnsignedDecimal,
        ),
        "BIGINT" | "INT8" | "SERIAL" => int(Type::Int64, 64),
        "FLOAT" | "FLOAT4" => plain(Type::Float32, Kind::Float32),
        "DOUBLE" | "DOUBLE PRECISION" | "REAL" | "FLOAT8" => plain(Type::Float64, Kind::Float64),
        "DECIMAL" | "NUMERIC" | "DEC" | "FIXED" => {
            let precision = column.length.unwrap_or(10);
            decimal_schema(modes, column.scale.unwrap_or(0), precision)
        }
        "BIT" if column.length.unwrap_or(1) <= 1 => plain(Type::Boolean, Kind::Bool),
        "BIT" => {
            let n = column.length.unwrap_or(1).clamp(1, 64);
            (
                logical(Type::Bytes, BITS).with_parameter("length", n.to_string()),
                Kind::Bits {
                    bytes: (n as usize).div_ceil(8),
                },
            )
        }
        "CHAR" | "VARCHAR" | "TINYTEXT" | "TEXT" | "MEDIUMTEXT" | "LONGTEXT" | "NCHAR"
        | "NVARCHAR" | "NATIONAL CHAR" | "NATIONAL VARCHAR" | "CHARACTER" | "CHARACTER VARYING"
        | "LONG VARCHAR" | "LONG" | "INET4" | "INET6" | "UUID" => plain(Type::String, Kind::Text),
        "JSON" => (
            Schema::new(Type::String).named(JSON).with_version(1),
            Kind::Text,
        ),
        "BINARY" => (
            binary_schema(modes),
            Kind::Binary {
                pad: Some(column.length.unwrap_or(1).max(0) as usize),
            },
        ),
        "VARBINARY" | "TINYBLOB" | "BLOB" | "MEDIUMBLOB" | "LONGBLOB" | "LONG VARBINARY" => {
            (binary_schema(modes), Kind::Binary { pad: None })
        }
        "ENUM" => (
            logical(Type::String, ENUM).with_parameter("allowed", column.members.join(",")),
            Kind::Enum(column.members.clone()),
        ),
        "SET" => (
            logical(Type::String, ENUM_SET).with_parameter("allowed", column.members.join(",")),
            Kind::Set(column.members.clone()),
        ),
        "YEAR" => (logical(Type::Int32, YEAR), Kind::Year),
        "DATE" => match modes.time {
            TimeMode::AdaptiveTimeMicroseconds => (logical(Type::Int32, DATE), Kind::Date),
            TimeMode::Connect => (Schema::date(), Kind::Date),
        },
        "TIME" => match modes.time {
            TimeMode::AdaptiveTimeMicroseconds => {
                (logical(Type::Int64, MICRO_TIME), Kind::TimeMicros)
            }
            TimeMode::Connect => (Schema::time(), Kind::TimeMillis),
        },
        "DATETIME" => match modes.time {
            TimeMode::AdaptiveTimeMicroseconds if fsp > 3 => {
                (logical(Type::Int64, MICRO_TIMESTAMP), Kind::TimestampMicros)
            }
            TimeMode::AdaptiveTimeMicroseconds => {
                (logical(Type::Int64, TIMESTAMP), Kind::TimestampMillis)
            }
            TimeMode::Connect => (Schema::timestamp(), Kind::TimestampMillis),
        },
        "TIMESTAMP" => (logical(Type::String, ZONED_TIMESTAMP), Kind::Zoned { fsp }),
        _ => return None,
    };
    Some(Mapped { schema, kind })
}

fn bad<T>(what: &str, text: &str) -> Result<T, String> {
    Err(format!("cannot read {text:?} as {what}"))
}

fn utf8<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(bytes).map_err(|_| format!("{what} that is not UTF-8: {bytes:?}"))
}

fn binary(modes: &Modes, bytes: Vec<u8>) -> Value {
    use base64::Engine;
    match modes.binary {
        BinaryMode::Bytes => Value::Bytes(bytes),
        BinaryMode::Hex => Value::String(bytes.iter().map(|b| format!("{b:02x}")).collect()),
        BinaryMode::Base64 => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        BinaryMode::Base64UrlSafe => {
            Value::String(base64::engine::general_purpose::URL_SAFE.encode(bytes))
        }
    }
}

fn decimal(modes: &Modes, text: &str, scale: i32) -> Result<Value, String> {
    match modes.decimal {
        DecimalMode::Double => text
            .parse::<f64>()
            .map(Value::Float64)
            .or_else(|_| bad("a decimal", text)),
        DecimalMode::String => Ok(Value::String(text.to_string())),
        DecimalMode::Precise => {
            let d = BigDecimal::parse(text).ok_or_else(|| format!("cannot read {text:?}"))?;
            let d = d
                .rescale(scale)
                .ok_or_else(|| format!("cannot rescale {text} to scale {scale}"))?;
            Ok(Value::Bytes(d.unscaled.to_twos_complement()))
        }
    }
}

fn int_value(ty: Type, v: i64) -> Result<Value, String> {
    Ok(match ty {
        Type::Int16 => Value::Int16(i16::try_from(v).map_err(|_| format!("{v} out of int16"))?),
        Type::Int32 => Value::Int32(i32::try_from(v).map_err(|_| format!("{v} out of int32"))?),
        _ => Value::Int64(v),
    })
}

/// Java's `ISO_LOCAL_TIME` fraction: as many digits as needed, none for zero.
fn trimmed_fraction(micros: i64) -> String {
    if micros == 0 {
        return String::new();
    }
    let digits = format!("{micros:06}");
    format!(".{}", digits.trim_end_matches('0'))
}

/// A `ZonedTimestamp` of microseconds since the epoch: `fsp` fraction digits, or as
/// many as needed when `fsp` is `None` (a snapshot's values; the binlog's are padded to
/// the column's precision, as Debezium writes them).
pub fn zoned(micros: i64, fsp: Option<usize>) -> String {
    let (y, m, d, h, mi, s, us) = civil(micros);
    let fraction = match fsp {
        None => trimmed_fraction(us),
        Some(0) => String::new(),
        Some(n) => format!(".{}", &format!("{us:06}")[..n.min(6)]),
    };
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}{fraction}Z")
}

/// `HH:MM:SS[.ffffff]`, possibly negative and beyond 24 hours, to microseconds.
fn time_micros(text: &str) -> Result<i64, String> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let (hms, frac) = body.split_once('.').unwrap_or((body, ""));
    let mut parts = hms.split(':');
    let (Some(h), Some(m), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return bad("a time", text);
    };
    let num = |p: &str| p.parse::<i64>().or_else(|_| bad("a time", text));
    let frac_us = if frac.is_empty() {
        0
    } else if frac.len() <= 6 && frac.bytes().all(|b| b.is_ascii_digit()) {
        num(frac)? * 10i64.pow(6 - frac.len() as u32)
    } else {
        return bad("a time", text);
    };
    let micros = ((num(h)? * 60 + num(m)?) * 60 + num(s)?) * 1_000_000 + frac_us;
    Ok(if negative { -micros } else { micros })
}

/// `YYYY-MM-DD`; `None` for MySQL's zero date (and a zero month or day), which Debezium
/// writes as null.
fn date_days(text: &str) -> Result<Option<i64>, String> {
    let mut parts = text.splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (parts.next(), parts.next(), parts.next()) else {
        return bad("a date", text);
    };
    let num = |p: &str| p.parse::<i64>().or_else(|_| bad("a date", text));
    let (y, m, d) = (num(y)?, num(m)?, num(d)?);
    if m == 0 || d == 0 {
        return Ok(None);
    }
    if m > 12 || d > 31 {
        return bad("a date", text);
    }
    Ok(Some(days_from_civil(y, m, d)))
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` as UTC wall time to microseconds since the epoch.
fn datetime_micros(text: &str) -> Result<Option<i64>, String> {
    let (date, time) = text.split_once(' ').unwrap_or((text, "00:00:00"));
    let Some(days) = date_days(date)? else {
        return Ok(None);
    };
    Ok(Some(days * 86_400_000_000 + time_micros(time)?))
}

fn enum_set(members: &[String], mask: u64) -> String {
    members
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < 64 && mask & (1u64 << i) != 0)
        .map(|(_, m)| m.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

impl Mapped {
    fn date_value(&self, days: i64) -> Result<Value, String> {
        Ok(Value::Int32(
            i32::try_from(days).map_err(|_| format!("{days} days out of range"))?,
        ))
    }

    fn datetime_value(&self, micros: i64) -> Value {
        match self.kind {
            Kind::TimestampMicros => Value::Int64(micros),
            _ => Value::Int64(micros.div_euclid(1000)),
        }
    }

    fn time_value(&self, micros: i64) -> Value {
        match self.kind {
            Kind::TimeMillis => Value::Int32((micros / 1000) as i32),
            _ => Value::Int64(micros),
        }
    }

    /// A value as a snapshot `SELECT` returns it in the text protocol (`None`: SQL
    /// NULL).
    pub fn from_text(&self, modes: &Modes, raw: Option<&[u8]>) -> Result<Value, String> {
        let Some(raw) = raw else {
            return Ok(Value::Null);
        };
        let text = || utf8(raw, "a value");
        Ok(match &self.kind {
            Kind::Int { ty, .. } => {
                let t = text()?;
                let v = match t.parse::<i64>() {
                    Ok(v) => v,
                    // BIGINT UNSIGNED above i64::MAX wraps (bigint.unsigned.handling.mode=long).
                    Err(_) => t.parse::<u64>().or_else(|_| bad("an integer", t))? as i64,
                };
                int_value(*ty, v)?
            }
            Kind::UnsignedDecimal => decimal(modes, text()?, 0)?,
            Kind::Float32 => {
                let t = text()?;
                Value::Float32(t.parse().or_else(|_| bad("a float", t))?)
            }
            Kind::Float64 => {
                let t = text()?;
                Value::Float64(t.parse().or_else(|_| bad("a double", t))?)
            }
            Kind::Decimal { scale } => decimal(modes, text()?, *scale)?,
            Kind::Bool => Value::Boolean(raw.iter().any(|b| *b != 0)),
            Kind::Bits { bytes } => Value::Bytes(bits(raw, *bytes)),
            Kind::Text | Kind::Enum(_) | Kind::Set(_) => {
                Value::String(String::from_utf8_lossy(raw).into_owned())
            }
            Kind::Binary { pad } => binary(modes, padded(raw, *pad)),
            Kind::Year => {
                let t = text()?;
                Value::Int32(t.parse().or_else(|_| bad("a year", t))?)
            }
            Kind::Date => match date_days(text()?)? {
                Some(days) => self.date_value(days)?,
                None => Value::Null,
            },
            Kind::TimeMicros | Kind::TimeMillis => self.time_value(time_micros(text()?)?),
            Kind::TimestampMillis | Kind::TimestampMicros => match datetime_micros(text()?)? {
                Some(micros) => self.datetime_value(micros),
                None => Value::Null,
            },
            Kind::Zoned { .. } => match datetime_micros(text()?)? {
                Some(micros) => Value::String(zoned(micros, None)),
                None => Value::Null,
            },
        })
    }

    /// A value of a binlog row image (`None`: SQL NULL).
    pub fn from_binlog(&self, modes: &Modes, value: Option<MyValue>) -> Result<Value, String> {
        let value = match value {
            None | Some(MyValue::NULL) => return Ok(Value::Null),
            Some(v) => v,
        };
        let unexpected = |v: &MyValue| format!("unexpected binlog value {v:?} for {:?}", self.kind);
        Ok(match (&self.kind, value) {
            (Kind::Int { ty, bits, unsigned }, MyValue::Int(v)) => {
                let v = if *unsigned && v < 0 && *bits < 64 {
                    v + (1i64 << bits)
                } else if !*unsigned && *bits == 24 && v >= 1 << 23 {
                    // mysql_common reads MEDIUMINT's three bytes without their sign.
                    v - (1 << 24)
                } else {
                    v
                };
                int_value(*ty, v)?
            }
            (Kind::Int { ty, .. }, MyValue::UInt(v)) => int_value(*ty, v as i64)?,
            (Kind::UnsignedDecimal, MyValue::Int(v)) => decimal(modes, &(v as u64).to_string(), 0)?,
            (Kind::UnsignedDecimal, MyValue::UInt(v)) => decimal(modes, &v.to_string(), 0)?,
            (Kind::Float32, MyValue::Float(f)) => Value::Float32(f),
            (Kind::Float32, MyValue::Double(f)) => Value::Float32(f as f32),
            (Kind::Float64, MyValue::Double(f)) => Value::Float64(f),
            (Kind::Float64, MyValue::Float(f)) => Value::Float64(f64::from(f)),
            (Kind::Decimal { scale }, MyValue::Bytes(b)) => {
                decimal(modes, utf8(&b, "a decimal")?, *scale)?
            }
            (Kind::Bool, MyValue::Bytes(b)) => Value::Boolean(b.iter().any(|x| *x != 0)),
            (Kind::Bits { bytes }, MyValue::Bytes(b)) => Value::Bytes(bits(&b, *bytes)),
            (Kind::Text, MyValue::Bytes(b)) => {
                Value::String(String::from_utf8_lossy(&b).into_owned())
            }
            (Kind::Binary { pad }, MyValue::Bytes(b)) => binary(modes, padded(&b, *pad)),
            (Kind::Enum(members), MyValue::Int(i)) => Value::String(
                usize::try_from(i)
                    .ok()
                    .and_then(|i| i.checked_sub(1))
                    .and_then(|i| members.get(i))
                    .cloned()
                    .unwrap_or_default(),
            ),
            (Kind::Set(members), MyValue::Bytes(b)) => {
                let mask = b
                    .iter()
                    .take(8)
                    .enumerate()
                    .fold(0u64, |m, (i, byte)| m | (u64::from(*byte) << (8 * i)));
                Value::String(enum_set(members, mask))
            }
            (Kind::Year, MyValue::Bytes(b)) => {
                let t = utf8(&b, "a year")?;
                let y: i32 = t.parse().or_else(|_| bad("a year", t))?;
                // The binlog stores YEAR as years since 1900; 0 is the zero year.
                Value::Int32(if y == 1900 { 0 } else { y })
            }
            (Kind::Year, MyValue::Int(y)) => Value::Int32(y as i32),
            (Kind::Date, MyValue::Date(y, m, d, ..)) => {
                if m == 0 || d == 0 {
                    Value::Null
                } else {
                    self.date_value(days_from_civil(i64::from(y), i64::from(m), i64::from(d)))?
                }
            }
            (
                Kind::TimestampMillis | Kind::TimestampMicros,
                MyValue::Date(y, m, d, h, mi, s, us),
            ) => {
                if m == 0 || d == 0 {
                    Value::Null
                } else {
                    let days = days_from_civil(i64::from(y), i64::from(m), i64::from(d));
                    let micros = days * 86_400_000_000
                        + ((i64::from(h) * 60 + i64::from(mi)) * 60 + i64::from(s)) * 1_000_000
                        + i64::from(us);
                    self.datetime_value(micros)
                }
            }
            (Kind::TimeMicros | Kind::TimeMillis, MyValue::Time(negative, days, h, m, s, us)) => {
                let micros = (((i64::from(days) * 24 + i64::from(h)) * 60 + i64::from(m)) * 60
                    + i64::from(s))
                    * 1_000_000
                    + i64::from(us);
                self.time_value(if negative { -micros } else { micros })
            }
            (Kind::Zoned { fsp }, MyValue::Bytes(b)) => {
                // TIMESTAMP2: seconds since the epoch, `.ffffff` when there is a fraction.
                let t = utf8(&b, "a timestamp")?;
                let (secs, frac) = t.split_once('.').unwrap_or((t, "0"));
                let secs: i64 = secs.parse().or_else(|_| bad("a timestamp", t))?;
                let frac: i64 = frac.parse().or_else(|_| bad("a timestamp", t))?;
                if secs == 0 && frac == 0 {
                    // The zero timestamp.
                    Value::Null
                } else {
                    Value::String(zoned(secs * 1_000_000 + frac, Some(*fsp)))
                }
            }
            (Kind::Zoned { fsp }, MyValue::Int(secs)) => {
                if secs == 0 {
                    Value::Null
                } else {
                    Value::String(zoned(secs * 1_000_000, Some(*fsp)))
                }
            }
            (_, other) => return Err(unexpected(&other)),
        })
    }
}

/// BIT(n) as Debezium writes it: the value's bytes little-endian, `len` of them (the
/// server sends them big-endian).
fn bits(big_endian: &[u8], len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = big_endian.iter().rev().copied().collect();
    out.resize(len, 0);
    out
}

fn padded(raw: &[u8], pad: Option<usize>) -> Vec<u8> {
    let mut out = raw.to_vec();
    if let Some(n) = pad
        && out.len() < n
    {
        out.resize(n, 0);
    }
    out
}

/// A column's literal default as a Connect value of its schema, as Debezium puts it
/// in the field schema (`None`: no default, or one that is an expression such as
/// `CURRENT_TIMESTAMP`).
pub fn default_value(column: &ddl::Column, mapped: &Mapped, modes: &Modes) -> Option<Value> {
    let text = column.default.as_deref()?;
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("current_timestamp") || lower.starts_with("now(") || lower == "null" {
        return None;
    }
    match mapped.from_text(modes, Some(text.as_bytes())) {
        Ok(Value::Null) | Err(_) => None,
        Ok(v) => Some(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(type_name: &str, length: Option<i32>, scale: Option<i32>) -> ddl::Column {
        ddl::Column {
            name: "c".into(),
            type_name: type_name.into(),
            length,
            scale,
            unsigned: type_name.ends_with(" UNSIGNED"),
            charset: None,
            optional: true,
            auto_increment: false,
            generated: false,
            default: None,
            members: vec!["a".into(), "b".into(), "c".into()],
            comment: None,
            position: 1,
        }
    }

    fn mapped(type_name: &str, length: Option<i32>, scale: Option<i32>) -> Mapped {
        map(&column(type_name, length, scale), &Modes::default()).expect("mapped")
    }

    fn b64(v: &Value) -> String {
        use base64::Engine;
        match v {
            Value::Bytes(b) => base64::engine::general_purpose::STANDARD.encode(b),
            other => panic!("not bytes: {other:?}"),
        }
    }

    #[test]
    fn decimals_are_debeziums_bytes_from_text_and_binlog() {
        let m = mapped("DECIMAL", Some(12), Some(4));
        let modes = Modes::default();
        // Values from docs/design/debezium-mariadb-events.md §7.
        assert_eq!(
            b64(&m.from_text(&modes, Some(b"12345678.9012")).unwrap()),
            "HL6ZGhQ="
        );
        assert_eq!(
            b64(&m.from_text(&modes, Some(b"-99999999.9999")).unwrap()),
            "/xcrWvAB"
        );
        assert_eq!(
            b64(&m
                .from_binlog(&modes, Some(MyValue::Bytes(b"0.5000".to_vec())))
                .unwrap()),
            "E4g="
        );
        let five = mapped("DECIMAL", Some(5), None);
        assert_eq!(
            b64(&five.from_text(&modes, Some(b"99999")).unwrap()),
            "AYaf"
        );
        assert_eq!(b64(&five.from_text(&modes, Some(b"-1")).unwrap()), "/w==");
        assert_eq!(b64(&five.from_text(&modes, Some(b"0")).unwrap()), "AA==");
    }

    #[test]
    fn unsigned_integers_are_widened_or_wrapped_as_debezium_does() {
        let modes = Modes::default();
        let tiny = mapped("TINYINT UNSIGNED", None, None);
        assert_eq!(
            tiny.from_binlog(&modes, Some(MyValue::Int(-1))).unwrap(),
            Value::Int16(255)
        );
        let int = mapped("INT UNSIGNED", None, None);
        assert_eq!(
            int.from_binlog(&modes, Some(MyValue::Int(-1))).unwrap(),
            Value::Int64(4_294_967_295)
        );
        let big = mapped("BIGINT UNSIGNED", None, None);
        assert_eq!(
            big.from_text(&modes, Some(b"18446744073709551615"))
                .unwrap(),
            Value::Int64(-1)
        );
        assert_eq!(
            big.from_binlog(&modes, Some(MyValue::Int(-1))).unwrap(),
            Value::Int64(-1)
        );
        let signed = mapped("MEDIUMINT", None, None);
        assert_eq!(
            signed
                .from_binlog(&modes, Some(MyValue::Int(16_777_215)))
                .unwrap(),
            Value::Int32(-1)
        );
        assert_eq!(
            signed
                .from_binlog(&modes, Some(MyValue::Int(8_388_608)))
                .unwrap(),
            Value::Int32(-8_388_608)
        );
        let medium = mapped("MEDIUMINT UNSIGNED", None, None);
        assert_eq!(
            medium
                .from_binlog(&modes, Some(MyValue::Int(16_777_215)))
                .unwrap(),
            Value::Int32(16_777_215)
        );
    }

    #[test]
    fn bits_are_little_endian_and_bit1_is_a_boolean() {
        let modes = Modes::default();
        let b12 = mapped("BIT", Some(12), None);
        assert_eq!(
            b64(&b12.from_text(&modes, Some(&[0x0A, 0xAA])).unwrap()),
            "qgo="
        );
        assert_eq!(b64(&b12.from_text(&modes, Some(&[0x01])).unwrap()), "AQA=");
        let b8 = mapped("BIT", Some(8), None);
        assert_eq!(
            b64(&b8
                .from_binlog(&modes, Some(MyValue::Bytes(vec![0xA5])))
                .unwrap()),
            "pQ=="
        );
        let b1 = mapped("BIT", Some(1), None);
        assert_eq!(
            b1.from_text(&modes, Some(&[1])).unwrap(),
            Value::Boolean(true)
        );
        assert_eq!(b1.schema.ty, Type::Boolean);
    }

    #[test]
    fn temporal_values_from_text_and_binlog_agree_with_debezium() {
        let modes = Modes::default();
        let date = mapped("DATE", None, None);
        assert_eq!(
            date.from_text(&modes, Some(b"2024-02-29")).unwrap(),
            Value::Int32(19782)
        );
        assert_eq!(
            date.from_text(&modes, Some(b"0000-00-00")).unwrap(),
            Value::Null
        );
        assert_eq!(
            date.from_binlog(&modes, Some(MyValue::Date(2024, 2, 29, 0, 0, 0, 0)))
                .unwrap(),
            Value::Int32(19782)
        );
        let time = mapped("TIME", Some(6), None);
        assert_eq!(
            time.from_text(&modes, Some(b"-838:59:59.000000")).unwrap(),
            Value::Int64(-3_020_399_000_000)
        );
        assert_eq!(
            time.from_binlog(&modes, Some(MyValue::Time(true, 0, 0, 0, 1, 500_000)))
                .unwrap(),
            Value::Int64(-1_500_000)
        );
        let dt = mapped("DATETIME", None, None);
        assert_eq!(
            dt.from_text(&modes, Some(b"1000-01-01 00:00:00")).unwrap(),
            Value::Int64(-30_610_224_000_000)
        );
        let dt6 = mapped("DATETIME", Some(6), None);
        assert_eq!(
            dt6.from_binlog(
                &modes,
                Some(MyValue::Date(1969, 12, 31, 23, 59, 59, 999_999))
            )
            .unwrap(),
            Value::Int64(-1)
        );
        let ts6 = mapped("TIMESTAMP", Some(6), None);
        assert_eq!(
            ts6.from_text(&modes, Some(b"2024-03-02 11:30:00.500000"))
                .unwrap(),
            Value::String("2024-03-02T11:30:00.5Z".into())
        );
        assert_eq!(
            ts6.from_binlog(&modes, Some(MyValue::Bytes(b"1709379000.500000".to_vec())))
                .unwrap(),
            Value::String("2024-03-02T11:30:00.500000Z".into())
        );
        let ts0 = mapped("TIMESTAMP", None, None);
        assert_eq!(
            ts0.from_binlog(&modes, Some(MyValue::Bytes(b"1709214356".to_vec())))
                .unwrap(),
            Value::String("2024-02-29T13:45:56Z".into())
        );
        let year = mapped("YEAR", None, None);
        assert_eq!(
            year.from_binlog(&modes, Some(MyValue::Bytes(b"2155".to_vec())))
                .unwrap(),
            Value::Int32(2155)
        );
    }

    #[test]
    fn enums_sets_and_binary_strings() {
        let modes = Modes::default();
        let e = mapped("ENUM", None, None);
        assert_eq!(
            e.from_binlog(&modes, Some(MyValue::Int(3))).unwrap(),
            Value::String("c".into())
        );
        assert_eq!(
            e.schema.parameters.get("allowed").map(String::as_str),
            Some("a,b,c")
        );
        let s = mapped("SET", None, None);
        assert_eq!(
            s.from_binlog(&modes, Some(MyValue::Bytes(vec![0b101])))
                .unwrap(),
            Value::String("a,c".into())
        );
        assert_eq!(
            s.from_binlog(&modes, Some(MyValue::Bytes(vec![0])))
                .unwrap(),
            Value::String(String::new())
        );
        let bin = mapped("BINARY", Some(4), None);
        assert_eq!(
            b64(&bin
                .from_binlog(&modes, Some(MyValue::Bytes(b"ab".to_vec())))
                .unwrap()),
            "YWIAAA=="
        );
    }

    #[test]
    fn bad_values_are_errors_not_panics() {
        let modes = Modes::default();
        for (t, raw) in [
            ("INT", &b"x"[..]),
            ("DATE", b"2024-13"),
            ("TIME", b"1:2"),
            ("DATETIME", b"2024-01-01 99"),
            ("DECIMAL", b"1e"),
        ] {
            assert!(
                mapped(t, Some(10), Some(2))
                    .from_text(&modes, Some(raw))
                    .is_err(),
                "{t}"
            );
        }
        assert!(
            mapped("INT", None, None)
                .from_binlog(&modes, Some(MyValue::Bytes(vec![1])))
                .is_err()
        );
        assert!(
            mapped("SMALLINT", None, None)
                .from_binlog(&modes, Some(MyValue::Int(1 << 40)))
                .is_err()
        );
    }
}
