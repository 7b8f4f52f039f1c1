//! JSON as Jackson writes it and numbers as Java prints and reads them: the string
//! escaping and compact writer both schema prints use, `Double.toString`,
//! `Float.toString`, `Double.parseDouble`, and Java's UTF-16 string order.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Number, Value};

/// Jackson's string escaping: `"` and `\`, the short escapes for backspace, tab, newline,
/// form feed and carriage return, `\u00XX` (upper-case hex) for other control characters,
/// everything else (`/` and non-ASCII included) as is.
pub(super) fn write_json_string(text: &str, out: &mut String) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            control if u32::from(control) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

/// Compact JSON with Jackson's number and string formatting, object keys in input order.
pub(super) fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(boolean) => out.push_str(if *boolean { "true" } else { "false" }),
        Value::Number(number) => write_json_number(number, out),
        Value::String(text) => write_json_string(text, out),
        Value::Array(elements) => {
            out.push('[');
            for (index, element) in elements.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json(element, out);
            }
            out.push(']');
        }
        Value::Object(entries) => {
            out.push('{');
            for (index, (key, entry)) in entries.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json_string(key, out);
                out.push(':');
                write_json(entry, out);
            }
            out.push('}');
        }
    }
}

fn write_json_number(number: &Number, out: &mut String) {
    if let Some(integer) = number.as_i64() {
        let _ = write!(out, "{integer}");
    } else if let Some(integer) = number.as_u64() {
        let _ = write!(out, "{integer}");
    } else if let Some(double) = number.as_f64() {
        write_java_number(java_double(double), double.is_finite(), out);
    }
}

pub(super) fn json_text(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

/// Java's `Double.toString` (what Jackson prints a `double` with): the shortest digits
/// that read back the same, plain for magnitudes in [10^-3, 10^7), `d.dddE±n` otherwise,
/// always with a fractional digit.
pub(super) fn java_double(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_owned();
    }
    java_notation(&format!("{value:e}"))
}

/// Java's `Float.toString`, with the shortest digits of the `float`.
pub(super) fn java_float(value: f32) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_owned();
    }
    java_notation(&format!("{value:e}"))
}

/// Rewrites Rust's shortest scientific form (`-1.25e-5`) in Java's notation.
fn java_notation(scientific: &str) -> String {
    let (negative, unsigned) = match scientific.strip_prefix('-') {
        Some(unsigned) => (true, unsigned),
        None => (false, scientific),
    };
    let (mantissa, exponent) = unsigned.split_once('e').unwrap_or((unsigned, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if (-3..7).contains(&exponent) {
        if exponent >= 0 {
            let integer_digits = exponent as usize + 1;
            if digits.len() <= integer_digits {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', integer_digits - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..integer_digits]);
                out.push('.');
                out.push_str(&digits[integer_digits..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        out.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
        let _ = write!(out, "E{exponent}");
    }
    out
}

/// Java's `Double.parseDouble`, which Avro applies to a float or double field's string
/// default: surrounding blanks, a sign, `NaN`, `Infinity`, a decimal with an optional
/// exponent and `f`/`d` suffix. Hexadecimal forms are not accepted here.
pub(super) fn java_parse_double(text: &str) -> Option<f64> {
    let trimmed = text.trim_matches(|character: char| character <= ' ');
    let (sign, body) = match trimmed.as_bytes().first() {
        Some(b'-') => (-1.0, &trimmed[1..]),
        Some(b'+') => (1.0, &trimmed[1..]),
        _ => (1.0, trimmed),
    };
    match body {
        "NaN" => return Some(f64::NAN),
        "Infinity" => return Some(sign * f64::INFINITY),
        _ => {}
    }
    let body = body.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(body);
    let plausible = body.bytes().any(|byte| byte.is_ascii_digit())
        && body
            .bytes()
            .all(|byte| byte.is_ascii_digit() || matches!(byte, b'.' | b'e' | b'E' | b'+' | b'-'));
    if !plausible {
        return None;
    }
    body.parse::<f64>().ok().map(|value| sign * value)
}

/// Jackson quotes the non-finite numbers (`QUOTE_NON_NUMERIC_NUMBERS`).
pub(super) fn write_java_number(text: String, finite: bool, out: &mut String) {
    if finite {
        out.push_str(&text);
    } else {
        write_json_string(&text, out);
    }
}

/// Java's `String.compareTo` (UTF-16 code units), which orders Confluent's sorted maps.
pub(super) fn utf16_order(left: &str, right: &str) -> Ordering {
    left.encode_utf16().cmp(right.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_number_formatting() {
        let doubles: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (1000.0, "1000.0"),
            (1234567.0, "1234567.0"),
            (1.0e7, "1.0E7"),
            (12345678.9, "1.23456789E7"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (-1.5e-5, "-1.5E-5"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (2e23, "2.0E23"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (value, expected) in doubles {
            assert_eq!(java_double(*value), *expected, "{value}");
        }
        assert_eq!(java_float(0.1), "0.1");
        assert_eq!(java_float(12.3), "12.3");
        assert_eq!(java_float(1.0e10), "1.0E10");
        let parsed: &[(&str, Option<f64>)] = &[
            ("1.5", Some(1.5)),
            (" -2 ", Some(-2.0)),
            ("1e3", Some(1000.0)),
            ("2.5f", Some(2.5)),
            (".5", Some(0.5)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("inf", None),
            ("abc", None),
            ("", None),
            ("0x10", None),
        ];
        for (text, expected) in parsed {
            assert_eq!(java_parse_double(text), *expected, "{text:?}");
        }
    }
}
