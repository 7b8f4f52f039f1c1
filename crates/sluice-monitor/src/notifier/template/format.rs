//! Go's text forms of values: `fmt`'s `%v` (what `{{.Result.Complete}}` prints),
//! `Sprint`/`Sprintln`/`Sprintf` (`print`, `println`, `printf`), `encoding/json`
//! (`jsonencoder`) and the `html`, `js` and `urlquery` escapers.
//!
//! Where Go prints a memory address (a pointer nested inside a struct or slice), this
//! prints `&{...}`, the pointee, instead: an address means nothing to an alert's reader
//! and would differ on every run.

use std::fmt::Write;

use super::value::Value;

/// Go's `%v` of a float: the shortest digits that round-trip at the value's own width,
/// in exponent form (`1e+06`, `1e-05`) when the exponent is below -4 or at least 6, as
/// `strconv.FormatFloat(f, 'g', -1, bits)` decides.
pub(super) fn float_shortest(value: f64, bits32: bool) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let scientific = if bits32 {
        format!("{:e}", value as f32)
    } else {
        format!("{value:e}")
    };
    let (mantissa, exponent) = split_scientific(&scientific);
    if !(-4..6).contains(&exponent) {
        exponent_form(mantissa, exponent)
    } else if bits32 {
        format!("{}", value as f32)
    } else {
        format!("{value}")
    }
}

/// Go's exponent: a sign and at least two digits (`e+06`).
fn exponent_form(mantissa: &str, exponent: i32) -> String {
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

/// `1.5e-7` into (`1.5`, -7).
fn split_scientific(text: &str) -> (&str, i32) {
    match text.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, exponent.parse().unwrap_or(0)),
        None => (text, 0),
    }
}

/// How a value prints in a template action or `print`: Go's `%v`, after the template
/// engine's own step of looking through a top-level pointer (`{{.Result.Maxlag}}` prints
/// the partition, not `&{...}`).
pub(super) fn print_action(out: &mut String, value: &Value<'_>) {
    match value {
        Value::Missing => out.push_str("<no value>"),
        pointer @ (Value::Partition(Some(_)) | Value::Offset(Some(_)) | Value::Lag(Some(_))) => {
            write_struct(out, pointer, 'v', &Spec::default(), 1)
        }
        other => write_value(out, other, 'v', &Spec::default(), 0),
    }
}

/// Go's `fmt.Sprint`: operands formatted with `%v`, a space between two operands when
/// neither is a string.
pub(super) fn sprint(values: &[Value<'_>]) -> String {
    let mut out = String::new();
    for (index, value) in values.iter().enumerate() {
        if index > 0
            && !matches!(value, Value::String(_))
            && !matches!(values[index - 1], Value::String(_))
        {
            out.push(' ');
        }
        write_value(&mut out, value, 'v', &Spec::default(), 0);
    }
    out
}

/// Go's `fmt.Sprintln`: spaces between all operands and a newline.
pub(super) fn sprintln(values: &[Value<'_>]) -> String {
    let mut out = String::new();
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        write_value(&mut out, value, 'v', &Spec::default(), 0);
    }
    out.push('\n');
    out
}

#[derive(Clone, Debug, Default)]
struct Spec {
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    /// `%+v`: struct fields with their names (Go moves `+` here for `v`).
    plus_v: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

/// Widths and precisions above this are refused as Go refuses absurd ones (`%!(BADWIDTH)`),
/// so a template cannot ask for a gigabyte of padding.
const WIDTH_MAX: usize = 1_000_000;

/// Go's `fmt.Sprintf` for the verbs templates use: `v s d f e g t q x X o b c %`, flags
/// `-+# 0`, width and precision (`*` taken from the arguments). Mismatches print as Go
/// prints them (`%!d(string=x)`, `%!d(MISSING)`, `%!(EXTRA int=1)`), never an error.
pub(super) fn sprintf(format: &str, arguments: &[Value<'_>]) -> String {
    let mut out = String::with_capacity(format.len() + 16);
    let mut characters = format.chars().peekable();
    let mut next_argument = 0;
    while let Some(character) = characters.next() {
        if character != '%' {
            out.push(character);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&flag) = characters.peek() {
            match flag {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                '#' => spec.sharp = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                _ => break,
            }
            characters.next();
        }
        let mut number = |characters: &mut std::iter::Peekable<std::str::Chars<'_>>,
                          out: &mut String|
         -> Option<usize> {
            if characters.peek() == Some(&'*') {
                characters.next();
                let argument = arguments.get(next_argument);
                next_argument += 1;
                return match argument.map(Value::as_int) {
                    Some(Ok(value)) if (0..=WIDTH_MAX as i64).contains(&value) => {
                        Some(value as usize)
                    }
                    _ => {
                        out.push_str("%!(BADWIDTH)");
                        None
                    }
                };
            }
            let mut value: Option<usize> = None;
            while let Some(digit) = characters.peek().and_then(|c| c.to_digit(10)) {
                characters.next();
                value = Some((value.unwrap_or(0) * 10 + digit as usize).min(WIDTH_MAX));
            }
            value
        };
        spec.width = number(&mut characters, &mut out);
        if characters.peek() == Some(&'.') {
            characters.next();
            spec.precision = Some(number(&mut characters, &mut out).unwrap_or(0));
        }
        let Some(verb) = characters.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(argument) = arguments.get(next_argument) else {
            let _ = write!(out, "%!{verb}(MISSING)");
            continue;
        };
        next_argument += 1;
        if spec.minus {
            spec.zero = false;
        }
        if verb == 'v' {
            spec.plus_v = spec.plus;
            spec.plus = false;
        }
        write_value(&mut out, argument, verb, &spec, 0);
    }
    if next_argument < arguments.len() {
        out.push_str("%!(EXTRA ");
        for (index, argument) in arguments[next_argument..].iter().enumerate() {
            if index > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{}=", argument.go_type_name());
            write_value(&mut out, argument, 'v', &Spec::default(), 0);
        }
        out.push(')');
    }
    out
}

fn pad(out: &mut String, text: &str, spec: &Spec, numeric: bool) {
    let length = text.chars().count();
    let width = spec.width.unwrap_or(0);
    if length >= width {
        out.push_str(text);
        return;
    }
    let padding = width - length;
    if spec.minus {
        out.push_str(text);
        out.extend(std::iter::repeat_n(' ', padding));
    } else if spec.zero && numeric {
        // Zeros go after the sign.
        let (sign, digits) = match text.as_bytes().first() {
            Some(b'+' | b'-' | b' ') => text.split_at(1),
            _ => ("", text),
        };
        out.push_str(sign);
        out.extend(std::iter::repeat_n('0', padding));
        out.push_str(digits);
    } else if spec.zero {
        out.extend(std::iter::repeat_n('0', padding));
        out.push_str(text);
    } else {
        out.extend(std::iter::repeat_n(' ', padding));
        out.push_str(text);
    }
}

fn bad_verb(out: &mut String, value: &Value<'_>, verb: char) {
    let _ = write!(out, "%!{verb}(");
    match value {
        Value::Nil => out.push_str("<nil>"),
        other => {
            let _ = write!(out, "{}=", other.go_type_name());
            write_value(out, other, 'v', &Spec::default(), 0);
        }
    }
    out.push(')');
}

/// Go's `%v`-family formatting of one value at a nesting depth (depth > 0 is inside a
/// struct, slice or map, where pointers are not looked through).
fn write_value(out: &mut String, value: &Value<'_>, verb: char, spec: &Spec, depth: usize) {
    match value {
        Value::Missing => pad(out, "<no value>", spec, false),
        Value::Nil => match verb {
            'v' => pad(out, "<nil>", spec, false),
            _ => bad_verb(out, value, verb),
        },
        Value::Bool(flag) => match verb {
            'v' | 't' => pad(out, if *flag { "true" } else { "false" }, spec, false),
            _ => bad_verb(out, value, verb),
        },
        Value::Int(number) => write_integer(out, i128::from(*number), value, verb, spec),
        Value::Uint(number) => write_integer(out, i128::from(*number), value, verb, spec),
        Value::Status(status) => match verb {
            // A Stringer: Go calls String() for these verbs.
            'v' | 's' | 'q' | 'x' | 'X' => write_string(out, status.as_str(), verb, spec),
            _ => write_integer(out, i128::from(status.code()), value, verb, spec),
        },
        Value::Float32(number) => write_float(out, f64::from(*number), true, value, verb, spec),
        Value::Float64(number) => write_float(out, *number, false, value, verb, spec),
        Value::String(text) => match verb {
            'v' | 's' | 'q' | 'x' | 'X' => write_string(out, text, verb, spec),
            _ => bad_verb(out, value, verb),
        },
        Value::Time(time) => match verb {
            'v' | 's' | 'q' | 'x' | 'X' => write_string(out, &time.go_string(), verb, spec),
            _ => bad_verb(out, value, verb),
        },
        Value::Partition(None) | Value::Offset(None) | Value::Lag(None) => {
            pad(out, "<nil>", spec, false)
        }
        Value::Partition(Some(_)) | Value::Offset(Some(_)) | Value::Lag(Some(_)) => {
            out.push('&');
            write_struct(out, value, verb, spec, depth + 1);
        }
        Value::Root(_) | Value::Group(_) => write_struct(out, value, verb, spec, depth + 1),
        Value::Partitions(list) => {
            out.push('[');
            for (index, partition) in list.iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                write_value(
                    out,
                    &Value::Partition(Some(partition)),
                    verb,
                    spec,
                    depth + 1,
                );
            }
            out.push(']');
        }
        Value::StringList(list) => {
            out.push('[');
            for (index, item) in list.iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                write_string(out, item, verb, spec);
            }
            out.push(']');
        }
        Value::StringMap(_) | Value::StringListMap(_) | Value::IntMap(_) => {
            out.push_str("map[");
            let entries = value.elements().unwrap_or_default();
            for (index, (key, element)) in entries.iter().enumerate() {
                if index > 0 {
                    out.push(' ');
                }
                write_value(out, key, verb, spec, depth + 1);
                out.push(':');
                write_value(out, element, verb, spec, depth + 1);
            }
            out.push(']');
        }
    }
}

/// `{a b c}`, or with `%+v` `{Name:a Other:b}`.
fn write_struct(out: &mut String, value: &Value<'_>, verb: char, spec: &Spec, depth: usize) {
    out.push('{');
    for (index, (name, field)) in value.struct_fields().unwrap_or_default().iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        if spec.plus_v {
            out.push_str(name);
            out.push(':');
        }
        write_value(out, field, verb, spec, depth);
    }
    out.push('}');
}

fn write_string(out: &mut String, text: &str, verb: char, spec: &Spec) {
    let truncated: String;
    let text = match spec.precision {
        Some(precision) if verb != 'x' && verb != 'X' => {
            truncated = text.chars().take(precision).collect();
            truncated.as_str()
        }
        _ => text,
    };
    match verb {
        'q' => pad(out, &go_quote(text), spec, false),
        'x' | 'X' => {
            let mut hex = String::with_capacity(text.len() * 2);
            for byte in text.bytes() {
                if verb == 'x' {
                    let _ = write!(hex, "{byte:02x}");
                } else {
                    let _ = write!(hex, "{byte:02X}");
                }
            }
            pad(out, &hex, spec, false)
        }
        _ => pad(out, text, spec, false),
    }
}

fn write_integer(out: &mut String, number: i128, value: &Value<'_>, verb: char, spec: &Spec) {
    let magnitude = number.unsigned_abs();
    let mut digits = match verb {
        'v' | 'd' => magnitude.to_string(),
        'b' => format!("{magnitude:b}"),
        'o' | 'O' => format!("{magnitude:o}"),
        'x' => format!("{magnitude:x}"),
        'X' => format!("{magnitude:X}"),
        'c' => {
            let character = u32::try_from(number)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or(char::REPLACEMENT_CHARACTER);
            return pad(out, &character.to_string(), spec, false);
        }
        'q' => {
            let character = u32::try_from(number)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or(char::REPLACEMENT_CHARACTER);
            return pad(out, &format!("'{character}'"), spec, false);
        }
        _ => return bad_verb(out, value, verb),
    };
    if let Some(precision) = spec.precision
        && digits.len() < precision
    {
        digits = "0".repeat(precision - digits.len()) + &digits;
    }
    let prefix = match (verb, spec.sharp) {
        ('x', true) => "0x",
        ('X', true) => "0X",
        ('o', true) => "0",
        ('O', _) => "0o",
        ('b', true) => "0b",
        _ => "",
    };
    let sign = if number < 0 {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    };
    let text = format!("{sign}{prefix}{digits}");
    // Go ignores the zero flag when a precision is given for integers.
    let numeric = spec.precision.is_none();
    pad(out, &text, spec, numeric)
}

fn write_float(
    out: &mut String,
    number: f64,
    bits32: bool,
    value: &Value<'_>,
    verb: char,
    spec: &Spec,
) {
    let mut text = match (verb, spec.precision) {
        ('v', None) | ('g', None) | ('G', None) => float_shortest(number, bits32),
        ('v' | 'g' | 'G', Some(precision)) => float_general(number, precision.max(1)),
        ('f' | 'F', precision) => format!("{number:.*}", precision.unwrap_or(6)),
        ('e' | 'E', precision) => {
            let scientific = format!("{number:.*e}", precision.unwrap_or(6));
            let (mantissa, exponent) = split_scientific(&scientific);
            exponent_form(mantissa, exponent)
        }
        _ => return bad_verb(out, value, verb),
    };
    if matches!(verb, 'E' | 'G') {
        text = text.to_uppercase();
    }
    if !text.starts_with('-') {
        if spec.plus {
            text.insert(0, '+');
        } else if spec.space {
            text.insert(0, ' ');
        }
    }
    pad(out, &text, spec, number.is_finite())
}

/// `%.Ng`: N significant digits, exponent form when the exponent is below -4 or at least
/// N, trailing zeros dropped.
fn float_general(number: f64, precision: usize) -> String {
    if !number.is_finite() {
        return float_shortest(number, false);
    }
    let scientific = format!("{number:.*e}", precision - 1);
    let (mantissa, exponent) = split_scientific(&scientific);
    if exponent < -4 || exponent >= precision as i32 {
        let mantissa = if mantissa.contains('.') {
            mantissa.trim_end_matches('0').trim_end_matches('.')
        } else {
            mantissa
        };
        exponent_form(mantissa, exponent)
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        let fixed = format!("{number:.decimals$}");
        if fixed.contains('.') {
            fixed
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        } else {
            fixed
        }
    }
}

/// Go's `strconv.Quote`.
fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            character if (character as u32) < 0x20 || character == '\x7f' => {
                let _ = write!(out, "\\x{:02x}", character as u32);
            }
            character if character.is_control() => {
                let _ = write!(out, "\\u{:04x}", character as u32);
            }
            character => out.push(character),
        }
    }
    out.push('"');
    out
}

/// Go's `encoding/json` of a value, Burrow's JSON tags and all (`current_lag`,
/// `observedAt`, statuses as names, `lag` as a number or null). `Err` where Go's
/// `json.Marshal` fails: a NaN or infinite float, a year outside 0..=9999.
pub(super) fn json(out: &mut String, value: &Value<'_>) -> Result<(), String> {
    match value {
        Value::Missing | Value::Nil => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Int(number) => {
            let _ = write!(out, "{number}");
        }
        Value::Uint(number) => {
            let _ = write!(out, "{number}");
        }
        Value::Float32(number) => json_float(out, f64::from(*number), true)?,
        Value::Float64(number) => json_float(out, *number, false)?,
        Value::String(text) => json_string(out, text),
        Value::Status(status) => json_string(out, status.as_str()),
        Value::Time(time) => {
            let text = time
                .rfc3339_nanos()
                .ok_or("json: Time.MarshalJSON: year outside of range [0,9999]")?;
            json_string(out, &text);
        }
        Value::Partition(None) | Value::Offset(None) => out.push_str("null"),
        Value::Lag(lag) => match lag {
            Some(lag) => {
                let _ = write!(out, "{lag}");
            }
            None => out.push_str("null"),
        },
        Value::Root(_) | Value::Group(_) | Value::Partition(Some(_)) | Value::Offset(Some(_)) => {
            let tags: &[(&str, Option<&str>)] = match value {
                Value::Root(_) => &[],
                Value::Group(_) => &[
                    ("TotalPartitions", Some("partition_count")),
                    ("TotalLag", Some("totallag")),
                ],
                Value::Partition(_) => &[
                    ("ClientID", Some("client_id")),
                    ("CurrentLag", Some("current_lag")),
                ],
                _ => &[("Order", None), ("ObservedTimestamp", Some("observedAt"))],
            };
            let lower_case_tags = !matches!(value, Value::Root(_));
            out.push('{');
            let mut first = true;
            for (name, field) in value.struct_fields().unwrap_or_default() {
                let key = match tags.iter().find(|(field_name, _)| *field_name == name) {
                    Some((_, Some(tag))) => (*tag).to_string(),
                    Some((_, None)) => continue,
                    None if lower_case_tags => name.to_lowercase(),
                    None => name.to_string(),
                };
                if !first {
                    out.push(',');
                }
                first = false;
                json_string(out, &key);
                out.push(':');
                json(out, &field)?;
            }
            out.push('}');
        }
        Value::Partitions(_) | Value::StringList(_) => {
            out.push('[');
            for (index, (_, element)) in value.elements().unwrap_or_default().iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                json(out, element)?;
            }
            out.push(']');
        }
        Value::StringMap(_) | Value::StringListMap(_) | Value::IntMap(_) => {
            out.push('{');
            for (index, (key, element)) in value.elements().unwrap_or_default().iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                json_string(out, key.as_str().unwrap_or_default());
                out.push(':');
                json(out, element)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// Go writes floats in JSON without an exponent between 1e-6 and 1e21, shortest digits
/// at the value's width (`1` for a float32 1.0, not `1.0`).
fn json_float(out: &mut String, number: f64, bits32: bool) -> Result<(), String> {
    if !number.is_finite() {
        return Err(format!(
            "json: unsupported value: {}",
            float_shortest(number, bits32)
        ));
    }
    let magnitude = if bits32 {
        f64::from((number as f32).abs())
    } else {
        number.abs()
    };
    if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
        let scientific = if bits32 {
            format!("{:e}", number as f32)
        } else {
            format!("{number:e}")
        };
        let (mantissa, exponent) = split_scientific(&scientific);
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "{mantissa}e{sign}{}", exponent.unsigned_abs());
    } else if bits32 {
        let _ = write!(out, "{}", number as f32);
    } else {
        let _ = write!(out, "{number}");
    }
    Ok(())
}

/// A JSON string as Go writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped too.
fn json_string(out: &mut String, text: &str) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", character as u32);
            }
            character if (character as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", character as u32);
            }
            character => out.push(character),
        }
    }
    out.push('"');
}

/// Go's `template.HTMLEscapeString`.
pub(super) fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            character => out.push(character),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
pub(super) fn js_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            character if (character as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", character as u32);
            }
            character if character.is_control() => {
                let _ = write!(out, "\\u{:04X}", character as u32);
            }
            character => out.push(character),
        }
    }
    out
}

/// Go's `url.QueryEscape`: what the `urlquery` function applies.
pub(super) fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => {
                let _ = write!(out, "%{other:02X}");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn string(text: &str) -> Value<'_> {
        Value::String(Cow::Borrowed(text))
    }

    #[test]
    fn floats_print_as_go_prints_them() {
        let cases: &[(f64, bool, &str)] = &[
            (1.0, true, "1"),
            (0.5, true, "0.5"),
            (0.1, true, "0.1"),
            (0.7, true, "0.7"),
            (0.1, false, "0.1"),
            (123456.0, false, "123456"),
            (1234567.0, false, "1.234567e+06"),
            (1e6, false, "1e+06"),
            (0.0001, false, "0.0001"),
            (0.00001, false, "1e-05"),
            (-2.5, false, "-2.5"),
            (f64::INFINITY, false, "+Inf"),
        ];
        for (value, bits32, expected) in cases {
            assert_eq!(&float_shortest(*value, *bits32), expected, "{value}");
        }
        let mut out = String::new();
        json_float(&mut out, 1.0, true).expect("finite");
        out.push(' ');
        json_float(&mut out, 1e-7, false).expect("finite");
        out.push(' ');
        json_float(&mut out, 1e21, false).expect("finite");
        out.push(' ');
        json_float(&mut out, 0.7, true).expect("finite");
        assert_eq!(out, "1 1e-7 1e+21 0.7");
        assert!(json_float(&mut out, f64::NAN, false).is_err());
    }

    #[test]
    fn printf_follows_go() {
        let cases: Vec<(&str, Vec<Value<'_>>, &str)> = vec![
            ("%d partitions", vec![Value::Int(3)], "3 partitions"),
            (
                "%5d|%-5d|%05d",
                vec![Value::Int(42), Value::Int(42), Value::Int(-42)],
                "   42|42   |-0042",
            ),
            ("%.2f%%", vec![Value::Float64(99.456)], "99.46%"),
            ("%s is %v", vec![string("lag"), Value::Uint(7)], "lag is 7"),
            ("%q", vec![string("a\"b\n")], "\"a\\\"b\\n\""),
            (
                "%x %X %#x %o %b",
                vec![
                    Value::Int(255),
                    Value::Int(255),
                    Value::Int(255),
                    Value::Int(8),
                    Value::Int(5),
                ],
                "ff FF 0xff 10 101",
            ),
            ("%t", vec![Value::Bool(true)], "true"),
            ("%d", vec![string("x")], "%!d(string=x)"),
            ("%d %d", vec![Value::Int(1)], "1 %!d(MISSING)"),
            ("%d", vec![Value::Int(1), Value::Int(2)], "1%!(EXTRA int=2)"),
            ("%e", vec![Value::Float64(1234.5678)], "1.234568e+03"),
            (
                "%g %.3g %.3g",
                vec![
                    Value::Float64(0.5),
                    Value::Float64(100.0),
                    Value::Float64(1e5),
                ],
                "0.5 100 1e+05",
            ),
            (
                "%.3s|%8s|%-8s|",
                vec![string("abcdef"), string("ab"), string("ab")],
                "abc|      ab|ab      |",
            ),
            (
                "%v %d %s",
                vec![
                    Value::Status(crate::types::Status::Warning),
                    Value::Status(crate::types::Status::Warning),
                    Value::Status(crate::types::Status::Stop),
                ],
                "WARN 2 STOP",
            ),
            ("%*d", vec![Value::Int(4), Value::Int(7)], "   7"),
            ("%+d % d", vec![Value::Int(5), Value::Int(5)], "+5  5"),
            ("%c", vec![Value::Int(65)], "A"),
            ("%v", vec![Value::Nil], "<nil>"),
            ("100%", vec![], "100%!(NOVERB)"),
        ];
        for (format, arguments, expected) in cases {
            assert_eq!(sprintf(format, &arguments), expected, "{format}");
        }
    }

    #[test]
    fn sprint_spaces_only_between_non_strings() {
        assert_eq!(
            sprint(&[Value::Int(1), Value::Int(2), string("a"), Value::Int(3)]),
            "1 2a3"
        );
        assert_eq!(sprintln(&[string("a"), string("b")]), "a b\n");
    }

    #[test]
    fn escapers_match_go() {
        assert_eq!(
            html_escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&#34;&lt;/a&gt;"
        );
        assert_eq!(
            js_escape("a'b\"c<d>=&\\\n"),
            "a\\'b\\\"c\\u003Cd\\u003E\\u003D\\u0026\\\\\\u000A"
        );
        assert_eq!(query_escape("a b&c=d/é~"), "a+b%26c%3Dd%2F%C3%A9~");
        let mut out = String::new();
        json_string(&mut out, "<tag> & \"q\"\u{1}");
        assert_eq!(out, "\"\\u003ctag\\u003e \\u0026 \\\"q\\\"\\u0001\"");
    }
}
