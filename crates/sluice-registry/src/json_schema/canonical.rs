//! Confluent's canonical and normalized strings of a JSON Schema: the text as Jackson
//! re-serializes it (compact, keys in the order written, numbers as Jackson prints them),
//! and the same with object keys sorted.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

/// JSON as Jackson holds it for Confluent: numbers kept as literals (Confluent reads floats
/// as exact `BigDecimal`s), objects in the order written with a repeated key keeping its
/// first position and last value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum LiteralJson {
    Null,
    Bool(bool),
    /// Already in Jackson's notation.
    Number(String),
    String(String),
    Array(Vec<LiteralJson>),
    Object(Vec<(String, LiteralJson)>),
}

/// The members of one JSON object, each value left unparsed.
struct RawMembers<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for RawMembers<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = RawMembers<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(RawMembers(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

impl LiteralJson {
    /// Parses text [`read_document`](super::parse::read_document) accepted (so it is JSON
    /// and at most [`MAX_SCHEMA_DEPTH`](super::MAX_SCHEMA_DEPTH) deep, which bounds the
    /// recursion).
    pub(super) fn parse(text: &str) -> Result<LiteralJson, serde_json::Error> {
        let raw: &RawValue = serde_json::from_str(text)?;
        Self::from_raw(raw)
    }

    fn from_raw(raw: &RawValue) -> Result<LiteralJson, serde_json::Error> {
        let text = raw.get().trim();
        Ok(match text.as_bytes().first() {
            Some(b'{') => {
                let RawMembers(raw_members) = serde_json::from_str(text)?;
                let mut members: Vec<(String, LiteralJson)> = Vec::with_capacity(raw_members.len());
                let mut positions: HashMap<String, usize> = HashMap::new();
                for (key, raw_value) in raw_members {
                    let value = Self::from_raw(raw_value)?;
                    match positions.get(&key) {
                        Some(&position) => members[position].1 = value,
                        None => {
                            positions.insert(key.clone(), members.len());
                            members.push((key, value));
                        }
                    }
                }
                LiteralJson::Object(members)
            }
            Some(b'[') => {
                let raw_items: Vec<&RawValue> = serde_json::from_str(text)?;
                let items = raw_items
                    .into_iter()
                    .map(Self::from_raw)
                    .collect::<Result<Vec<_>, _>>()?;
                LiteralJson::Array(items)
            }
            Some(b'"') => LiteralJson::String(serde_json::from_str(text)?),
            Some(b't') => LiteralJson::Bool(true),
            Some(b'f') => LiteralJson::Bool(false),
            Some(b'n') => LiteralJson::Null,
            _ => LiteralJson::Number(jackson_number(text)),
        })
    }

    /// The same value with every object's keys sorted as Java sorts strings (UTF-16 units).
    pub(super) fn sorted(&self) -> LiteralJson {
        match self {
            LiteralJson::Array(items) => {
                LiteralJson::Array(items.iter().map(LiteralJson::sorted).collect())
            }
            LiteralJson::Object(members) => {
                let mut sorted: Vec<(String, LiteralJson)> = members
                    .iter()
                    .map(|(key, value)| (key.clone(), value.sorted()))
                    .collect();
                sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
                LiteralJson::Object(sorted)
            }
            other => other.clone(),
        }
    }

    pub(super) fn to_json_string(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            LiteralJson::Null => out.push_str("null"),
            LiteralJson::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            LiteralJson::Number(literal) => out.push_str(literal),
            LiteralJson::String(value) => write_jackson_string(value, out),
            LiteralJson::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            LiteralJson::Object(members) => {
                out.push('{');
                for (index, (key, value)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_jackson_string(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// A string as Jackson's generator writes it: `"` and `\` escaped, the control characters
/// `\b \t \n \f \r` in short form and the others as `\u00XX` (upper-case hex), the rest raw.
fn write_jackson_string(value: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{0C}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let code = c as usize;
                out.push_str("\\u00");
                out.push(HEX[code >> 4] as char);
                out.push(HEX[code & 0xF] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON number literal as Jackson prints it back for Confluent: an integer as its digits
/// (`-0` is the int 0), a fraction or exponent as `BigDecimal.toString()` of the exact
/// literal (`1.50` stays, `1e3` is `1E+3`, `0.0000001` is `1E-7`).
fn jackson_number(literal: &str) -> String {
    let (negative, unsigned) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (integer_digits, fraction_digits) = match mantissa.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (mantissa, None),
    };
    if exponent.is_none() && fraction_digits.is_none() {
        let is_zero = integer_digits.bytes().all(|b| b == b'0');
        return if negative && !is_zero {
            format!("-{integer_digits}")
        } else {
            integer_digits.to_owned()
        };
    }
    let fraction_digits = fraction_digits.unwrap_or("");
    let exponent: i64 = exponent.map_or(0, |text| {
        let (sign, digits) = match text.as_bytes().first() {
            Some(b'-') => (-1, &text[1..]),
            Some(b'+') => (1, &text[1..]),
            _ => (1, text),
        };
        let magnitude = digits
            .bytes()
            .filter(u8::is_ascii_digit)
            .fold(0i64, |acc, b| {
                acc.saturating_mul(10).saturating_add(i64::from(b - b'0'))
            });
        sign * magnitude
    });
    let all_digits = format!("{integer_digits}{fraction_digits}");
    let coefficient = all_digits.trim_start_matches('0');
    let coefficient = if coefficient.is_empty() {
        "0"
    } else {
        coefficient
    };
    let scale = (fraction_digits.len() as i64).saturating_sub(exponent);
    let sign = if negative && coefficient != "0" {
        "-"
    } else {
        ""
    };
    let length = coefficient.len() as i64;
    if scale == 0 {
        return format!("{sign}{coefficient}");
    }
    let adjusted = length - 1 - scale;
    if scale > 0 && adjusted >= -6 {
        // Plain notation; `adjusted >= -6` bounds the leading zeros to five.
        return if scale >= length {
            let zeros = "0".repeat((scale - length) as usize);
            format!("{sign}0.{zeros}{coefficient}")
        } else {
            let point = (length - scale) as usize;
            format!("{sign}{}.{}", &coefficient[..point], &coefficient[point..])
        };
    }
    let mut text = format!("{sign}{}", &coefficient[..1]);
    if length > 1 {
        text.push('.');
        text.push_str(&coefficient[1..]);
    }
    if adjusted != 0 {
        text.push('E');
        if adjusted > 0 {
            text.push('+');
        }
        text.push_str(&adjusted.to_string());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_schema::tests::parse;
    use crate::schema::ParsedSchema;

    #[test]
    fn canonical_is_compact_keeps_key_order_and_ignores_whitespace() {
        let cases = [
            (
                "{ \"type\" : \"object\",\n  \"properties\" : { \"b\" : { }, \"a\" : { } } }",
                r#"{"type":"object","properties":{"b":{},"a":{}}}"#,
            ),
            ("\n\ttrue  ", "true"),
            (
                r#"{"required": [ "b", "a" ], "title":"T"}"#,
                r#"{"required":["b","a"],"title":"T"}"#,
            ),
            // A repeated key keeps its first position and its last value, as in Jackson.
            (
                r#"{"title":"x","type":"string","title":"y"}"#,
                r#"{"title":"y","type":"string"}"#,
            ),
        ];
        for (text, canonical) in cases {
            assert_eq!(parse(text).canonical(), canonical, "{text}");
            assert_eq!(parse(canonical).canonical(), canonical, "{canonical}");
        }
    }

    #[test]
    fn canonical_prints_numbers_and_strings_as_jackson_does() {
        let numbers = [
            ("0", "0"),
            ("-0", "0"),
            ("-12", "-12"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("1.0", "1.0"),
            ("1.50", "1.50"),
            ("0.10", "0.10"),
            ("-0.0", "0.0"),
            ("1e3", "1E+3"),
            ("1E3", "1E+3"),
            ("-1.5E+10", "-1.5E+10"),
            ("1.5e1", "15"),
            ("10e-1", "1.0"),
            ("2.5e-3", "0.0025"),
            ("123.456e-2", "1.23456"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1E-7"),
            ("1e-7", "1E-7"),
            ("0e5", "0E+5"),
        ];
        for (literal, jackson) in numbers {
            assert_eq!(jackson_number(literal), jackson, "{literal}");
            let schema = parse(&format!(r#"{{"default":{literal}}}"#));
            assert_eq!(schema.canonical(), format!(r#"{{"default":{jackson}}}"#));
        }
        let schema = parse(r#"{"default":"a\/b\u001f\u00e9\n\"\\"}"#);
        assert_eq!(schema.canonical(), r#"{"default":"a/b\u001Fé\n\"\\"}"#);
    }

    #[test]
    fn normalized_sorts_object_keys_recursively_and_keeps_arrays() {
        let written = r#"{"type":"object","required":["b","a"],
            "properties":{"b":{"type":"string"},"a":{"enum":[2,1]}}}"#;
        let reordered = r#"{"properties":{"a":{"enum":[2,1]},"b":{"type":"string"}},
            "type":"object","required":["b","a"]}"#;
        let normalized = r#"{"properties":{"a":{"enum":[2,1]},"b":{"type":"string"}},"required":["b","a"],"type":"object"}"#;
        assert_eq!(parse(written).normalized(), normalized);
        assert_eq!(parse(reordered).normalized(), normalized);
        assert_ne!(parse(written).canonical(), parse(reordered).canonical());
        // Java orders strings by UTF-16 unit: a surrogate pair (U+1F600) sorts before U+FF61.
        let schema = parse("{\"\u{FF61}\":1,\"\u{1F600}\":2}");
        assert_eq!(schema.normalized(), "{\"\u{1F600}\":2,\"\u{FF61}\":1}");
    }
}
