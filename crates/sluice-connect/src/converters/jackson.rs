//! A JSON tree as Jackson builds and prints it for Kafka's `JsonConverter`: the
//! `JsonNode` the converter walks, the reader `ObjectMapper.readTree` is (with Kafka's
//! settings), and the writer `writeValueAsBytes` is.
//!
//! Why not `serde_json::Value`: the converter's output must be byte-for-byte Kafka's, and
//! its input must mean what it means to Kafka. That takes what `serde_json` does not keep
//! or does differently: a number's kind and exact text (Jackson reads `12` as an `int`
//! node, `4398046511104` as a `long` node, and, with `USE_BIG_DECIMAL_FOR_FLOATS`, `1.50`
//! as a `BigDecimal` of scale 2), Java's printing of `float`, `double` and `BigDecimal`
//! (`1.0E10`, `1E-7`), non-finite numbers written as strings (`"NaN"`), Jackson's string
//! escapes (`\u001F`), numbers with leading zeros (`ALLOW_LEADING_ZEROS_FOR_NUMBERS`), and
//! the accessors' lenient answers (`intValue()` of a string is 0).
//!
//! What it is not: a general JSON library. Members keep their order; a repeated name
//! keeps its first position and its last value, as Jackson's `ObjectNode` does.
//!
//! Limits: Jackson's `StreamReadConstraints` defaults — nesting at most
//! [`NESTING_DEPTH_MAX`], numbers at most [`NUMBER_LENGTH_MAX`] characters, strings at most
//! [`STRING_LENGTH_MAX`] bytes — so no input can exhaust the stack or spend unbounded time
//! on one number.
//!
//! Cost: reading and writing are linear in the bytes; every string and member name is
//! copied once into the tree.

use std::collections::HashMap;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::decimal::{BigDecimal, BigInteger};

/// Jackson's default `maxNestingDepth`.
pub(crate) const NESTING_DEPTH_MAX: usize = 1000;
/// Jackson's default `maxNumberLength`.
pub(crate) const NUMBER_LENGTH_MAX: usize = 1000;
/// Jackson's default `maxStringLength`.
pub(crate) const STRING_LENGTH_MAX: usize = 20_000_000;

/// Objects with more members than this index their names while being read, so a
/// repeated name is found without a scan.
const OBJECT_INDEX_MIN_MEMBERS: usize = 16;

/// Jackson's `JsonNode`, by the node classes Kafka's converter meets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsonNode {
    /// `MissingNode`: what `readTree` answers for input with no content.
    Missing,
    Null,
    Boolean(bool),
    Int(i32),
    Long(i64),
    BigInteger(BigInteger),
    Decimal(BigDecimal),
    Float(f32),
    Double(f64),
    Text(String),
    /// `BinaryNode`: written as base64 text.
    Binary(Vec<u8>),
    Array(Vec<JsonNode>),
    Object(Vec<(String, JsonNode)>),
}

impl JsonNode {
    /// `getNodeType()`'s name, as Kafka's messages print it.
    pub(crate) fn node_type(&self) -> &'static str {
        match self {
            JsonNode::Missing => "MISSING",
            JsonNode::Null => "NULL",
            JsonNode::Boolean(_) => "BOOLEAN",
            JsonNode::Int(_)
            | JsonNode::Long(_)
            | JsonNode::BigInteger(_)
            | JsonNode::Decimal(_)
            | JsonNode::Float(_)
            | JsonNode::Double(_) => "NUMBER",
            JsonNode::Text(_) => "STRING",
            JsonNode::Binary(_) => "BINARY",
            JsonNode::Array(_) => "ARRAY",
            JsonNode::Object(_) => "OBJECT",
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        matches!(self, JsonNode::Null)
    }

    pub(crate) fn is_number(&self) -> bool {
        self.node_type() == "NUMBER"
    }

    /// `isInt()`: an `int` node only (a number that fit 32 bits when read).
    pub(crate) fn is_int(&self) -> bool {
        matches!(self, JsonNode::Int(_))
    }

    /// `isIntegralNumber()`.
    pub(crate) fn is_integral_number(&self) -> bool {
        matches!(
            self,
            JsonNode::Int(_) | JsonNode::Long(_) | JsonNode::BigInteger(_)
        )
    }

    /// `get(name)` of an object; none for other nodes.
    pub(crate) fn get(&self, name: &str) -> Option<&JsonNode> {
        match self {
            JsonNode::Object(members) => members.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// `size()`: members of an object, elements of an array, 0 otherwise.
    pub(crate) fn size(&self) -> usize {
        match self {
            JsonNode::Object(members) => members.len(),
            JsonNode::Array(elements) => elements.len(),
            _ => 0,
        }
    }

    /// What `for (JsonNode e : node)` visits: an array's elements, an object's values,
    /// nothing for other nodes.
    pub(crate) fn elements(&self) -> Vec<&JsonNode> {
        match self {
            JsonNode::Array(elements) => elements.iter().collect(),
            JsonNode::Object(members) => members.iter().map(|(_, v)| v).collect(),
            _ => Vec::new(),
        }
    }

    /// `booleanValue()`: false for anything but a boolean.
    pub(crate) fn boolean_value(&self) -> bool {
        matches!(self, JsonNode::Boolean(true))
    }

    /// `textValue()`: none for anything but text.
    pub(crate) fn text_value(&self) -> Option<&str> {
        match self {
            JsonNode::Text(text) => Some(text),
            _ => None,
        }
    }

    /// `intValue()`: Java's narrowing of a number, 0 for anything else.
    pub(crate) fn int_value(&self) -> i32 {
        match self {
            JsonNode::Int(v) => *v,
            JsonNode::Long(v) => *v as i32,
            JsonNode::BigInteger(v) => v.low_i64() as i32,
            JsonNode::Decimal(v) => v.int_value(),
            JsonNode::Float(v) => java_f64_to_i32(f64::from(*v)),
            JsonNode::Double(v) => java_f64_to_i32(*v),
            _ => 0,
        }
    }

    /// `longValue()`: Java's narrowing of a number, 0 for anything else.
    pub(crate) fn long_value(&self) -> i64 {
        match self {
            JsonNode::Int(v) => i64::from(*v),
            JsonNode::Long(v) => *v,
            JsonNode::BigInteger(v) => v.low_i64(),
            JsonNode::Decimal(v) => v.long_value(),
            // Java's (long) of a double saturates and maps NaN to 0, as Rust's `as` does.
            JsonNode::Float(v) => *v as i64,
            JsonNode::Double(v) => *v as i64,
            _ => 0,
        }
    }

    /// `floatValue()`: the nearest float of a number, 0 for anything else.
    pub(crate) fn float_value(&self) -> f32 {
        match self {
            JsonNode::Int(v) => *v as f32,
            JsonNode::Long(v) => *v as f32,
            JsonNode::BigInteger(v) => v.to_java_string().parse().unwrap_or(0.0),
            JsonNode::Decimal(v) => v.to_f32(),
            JsonNode::Float(v) => *v,
            JsonNode::Double(v) => *v as f32,
            _ => 0.0,
        }
    }

    /// `doubleValue()`: the nearest double of a number, 0 for anything else.
    pub(crate) fn double_value(&self) -> f64 {
        match self {
            JsonNode::Int(v) => f64::from(*v),
            JsonNode::Long(v) => *v as f64,
            JsonNode::BigInteger(v) => v.to_java_string().parse().unwrap_or(0.0),
            JsonNode::Decimal(v) => v.to_f64(),
            JsonNode::Float(v) => f64::from(*v),
            JsonNode::Double(v) => *v,
            _ => 0.0,
        }
    }

    /// `decimalValue()` of a number node.
    pub(crate) fn decimal_value(&self) -> Option<BigDecimal> {
        Some(match self {
            JsonNode::Int(v) => BigDecimal::new(BigInteger::from_i64(i64::from(*v)), 0),
            JsonNode::Long(v) => BigDecimal::new(BigInteger::from_i64(*v), 0),
            JsonNode::BigInteger(v) => BigDecimal::new(v.clone(), 0),
            JsonNode::Decimal(v) => v.clone(),
            // BigDecimal.valueOf(double): the shortest decimal that reads back the same.
            JsonNode::Float(v) => BigDecimal::parse(&format!("{:e}", f64::from(*v)))?,
            JsonNode::Double(v) => BigDecimal::parse(&format!("{v:e}"))?,
            _ => return None,
        })
    }

    /// `binaryValue()`: a binary node's bytes, text decoded from base64 (Jackson's
    /// default variant: padding required, whitespace between characters ignored), none
    /// for anything else.
    pub(crate) fn binary_value(&self) -> Result<Option<Vec<u8>>, String> {
        match self {
            JsonNode::Binary(bytes) => Ok(Some(bytes.clone())),
            JsonNode::Text(text) => {
                let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                STANDARD
                    .decode(compact)
                    .map(Some)
                    .map_err(|e| format!("Cannot access contents of TextNode as binary: {e}"))
            }
            _ => Ok(None),
        }
    }
}

/// Java's `(int)` of a double: saturating, NaN to 0 (Rust's `as` does the same).
fn java_f64_to_i32(value: f64) -> i32 {
    value as i32
}

/// Why input is not JSON Jackson would read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonParseError(pub(crate) String);

/// `ObjectMapper.readTree(bytes)` with Kafka's `JsonDeserializer` settings: empty (or
/// only whitespace) input is [`JsonNode::Missing`]; content after the first value is not
/// read (Jackson's `FAIL_ON_TRAILING_TOKENS` is off), except that a number at the root
/// must be followed by whitespace or the end.
pub(crate) fn read_tree(bytes: &[u8]) -> Result<JsonNode, JsonParseError> {
    read(bytes, true)
}

/// `readTree` with Jackson's defaults, as Avro's schema parser reads: a number with a
/// fraction or exponent is a `double`.
pub(crate) fn read_tree_doubles(bytes: &[u8]) -> Result<JsonNode, JsonParseError> {
    read(bytes, false)
}

fn read(bytes: &[u8], big_decimal_floats: bool) -> Result<JsonNode, JsonParseError> {
    let mut reader = Reader {
        bytes,
        at: 0,
        big_decimal_floats,
    };
    reader.skip_whitespace();
    if reader.at == bytes.len() {
        return Ok(JsonNode::Missing);
    }
    reader.value(0)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// `USE_BIG_DECIMAL_FOR_FLOATS`: floating numbers as `BigDecimal`, else `double`.
    big_decimal_floats: bool,
}

impl Reader<'_> {
    fn error<T>(&self, what: impl Into<String>) -> Result<T, JsonParseError> {
        Err(JsonParseError(format!(
            "{} at byte {}",
            what.into(),
            self.at
        )))
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<JsonNode, JsonParseError> {
        match self.peek() {
            None => self.error("Unexpected end-of-input"),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(JsonNode::Text(self.string()?)),
            Some(b't') => self.literal("true", JsonNode::Boolean(true)),
            Some(b'f') => self.literal("false", JsonNode::Boolean(false)),
            Some(b'n') => self.literal("null", JsonNode::Null),
            Some(b'-' | b'0'..=b'9') => self.number(depth == 0),
            Some(other) => self.error(format!(
                "Unexpected character ({}): expected a valid value",
                describe(other)
            )),
        }
    }

    fn nesting(&self, depth: usize) -> Result<(), JsonParseError> {
        if depth > NESTING_DEPTH_MAX {
            return self.error(format!(
                "Document nesting depth ({depth}) exceeds the maximum allowed \
                 ({NESTING_DEPTH_MAX})"
            ));
        }
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Result<JsonNode, JsonParseError> {
        self.nesting(depth)?;
        self.at += 1;
        let mut members: Vec<(String, JsonNode)> = Vec::new();
        let mut index: Option<HashMap<String, usize>> = None;
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(JsonNode::Object(members));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return self
                    .error("Unexpected character: was expecting double-quote to start field name");
            }
            let name = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return self.error(
                    "Unexpected character: was expecting a colon to separate field name and value",
                );
            }
            self.at += 1;
            self.skip_whitespace();
            let value = self.value(depth)?;
            // A repeated name keeps its first position and takes the last value.
            if index.is_none() && members.len() >= OBJECT_INDEX_MIN_MEMBERS {
                index = Some(
                    members
                        .iter()
                        .enumerate()
                        .map(|(i, (n, _))| (n.clone(), i))
                        .collect(),
                );
            }
            let existing = match &index {
                Some(index) => index.get(&name).copied(),
                None => members.iter().position(|(n, _)| *n == name),
            };
            match existing {
                Some(position) => members[position].1 = value,
                None => {
                    if let Some(index) = &mut index {
                        index.insert(name.clone(), members.len());
                    }
                    members.push((name, value));
                }
            }
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(JsonNode::Object(members));
                }
                _ => {
                    return self.error(
                        "Unexpected character: was expecting comma to separate Object entries",
                    );
                }
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<JsonNode, JsonParseError> {
        self.nesting(depth)?;
        self.at += 1;
        let mut elements = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(JsonNode::Array(elements));
        }
        loop {
            self.skip_whitespace();
            elements.push(self.value(depth)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(JsonNode::Array(elements));
                }
                _ => {
                    return self.error(
                        "Unexpected character: was expecting comma to separate Array entries",
                    );
                }
            }
        }
    }

    fn literal(&mut self, word: &str, node: JsonNode) -> Result<JsonNode, JsonParseError> {
        let end = self.at + word.len();
        if self.bytes.get(self.at..end) != Some(word.as_bytes())
            || continues_token(self.bytes.get(end).copied())
        {
            let token_end = self.bytes[self.at..]
                .iter()
                .position(|&b| !continues_token(Some(b)))
                .map_or(self.bytes.len(), |n| self.at + n);
            let token = String::from_utf8_lossy(&self.bytes[self.at..token_end.max(self.at + 1)]);
            return self.error(format!(
                "Unrecognized token '{token}': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')"
            ));
        }
        self.at = end;
        Ok(node)
    }

    /// A number, kept as Jackson keeps it: an integer as the smallest of int, long and
    /// BigInteger that holds it, anything with a fraction or exponent as a BigDecimal.
    fn number(&mut self, at_root: bool) -> Result<JsonNode, JsonParseError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let digits_start = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        if self.at == digits_start {
            return self.error("Unexpected character: expected digit after minus sign");
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.at += 1;
            let fraction_start = self.at;
            while let Some(b'0'..=b'9') = self.peek() {
                self.at += 1;
            }
            if self.at == fraction_start {
                return self.error("Unexpected character: Decimal point not followed by a digit");
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            integral = false;
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            let exponent_start = self.at;
            while let Some(b'0'..=b'9') = self.peek() {
                self.at += 1;
            }
            if self.at == exponent_start {
                return self
                    .error("Unexpected character: Exponent indicator not followed by a digit");
            }
        }
        let length = self.at - start;
        if length > NUMBER_LENGTH_MAX {
            return self.error(format!(
                "Number value length ({length}) exceeds the maximum allowed ({NUMBER_LENGTH_MAX})"
            ));
        }
        if at_root && !matches!(self.peek(), None | Some(b' ' | b'\t' | b'\n' | b'\r')) {
            return self.error("Unexpected character: Expected space separating root-level values");
        }
        if let Some(next) = self.peek()
            && continues_token(Some(next))
        {
            return self.error(format!("Unexpected character ({})", describe(next)));
        }
        let text = std::str::from_utf8(&self.bytes[start..self.at]).expect("ASCII number");
        if !integral && !self.big_decimal_floats {
            return Ok(JsonNode::Double(
                text.parse().expect("a JSON number is a Rust float"),
            ));
        }
        if !integral {
            return BigDecimal::parse(text).map(JsonNode::Decimal).map_or_else(
                || self.error(format!("Malformed numeric value ({text})")),
                Ok,
            );
        }
        let negative = text.starts_with('-');
        let digits = text.trim_start_matches('-').trim_start_matches('0');
        let digits = if digits.is_empty() { "0" } else { digits };
        let number = BigInteger::from_digits(digits, negative).expect("ASCII digits");
        Ok(match number.to_i64() {
            Some(v) => match i32::try_from(v) {
                Ok(v) => JsonNode::Int(v),
                Err(_) => JsonNode::Long(v),
            },
            None => JsonNode::BigInteger(number),
        })
    }

    fn string(&mut self) -> Result<String, JsonParseError> {
        self.at += 1;
        let mut text = String::new();
        loop {
            let run_start = self.at;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            match std::str::from_utf8(&self.bytes[run_start..self.at]) {
                Ok(run) => text.push_str(run),
                Err(e) => {
                    self.at = run_start + e.valid_up_to();
                    return self.error("Invalid UTF-8 middle byte");
                }
            }
            if text.len() > STRING_LENGTH_MAX {
                return self.error(format!(
                    "String value length exceeds the maximum allowed ({STRING_LENGTH_MAX})"
                ));
            }
            match self.peek() {
                None => {
                    return self.error(
                        "Unexpected end-of-input: was expecting closing quote for a string value",
                    );
                }
                Some(b'"') => {
                    self.at += 1;
                    return Ok(text);
                }
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(&mut text)?;
                }
                Some(control) => {
                    return self.error(format!(
                        "Illegal unquoted character ({}): has to be escaped using backslash to be included in string value",
                        describe(control)
                    ));
                }
            }
        }
    }

    fn escape(&mut self, text: &mut String) -> Result<(), JsonParseError> {
        let Some(kind) = self.peek() else {
            return self.error("Unexpected end-of-input in character escape sequence");
        };
        self.at += 1;
        let decoded = match kind {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                if (0xd800..0xdc00).contains(&unit)
                    && self.bytes.get(self.at..self.at + 2) == Some(b"\\u")
                {
                    let save = self.at;
                    self.at += 2;
                    let low = self.hex4()?;
                    if (0xdc00..0xe000).contains(&low) {
                        let code = 0x10000
                            + ((u32::from(unit) - 0xd800) << 10)
                            + (u32::from(low) - 0xdc00);
                        char::from_u32(code).expect("a surrogate pair is a scalar value")
                    } else {
                        self.at = save;
                        char::REPLACEMENT_CHARACTER
                    }
                } else {
                    // A lone surrogate: Java keeps it in the string; Rust strings cannot,
                    // so it reads as U+FFFD.
                    char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
            }
            other => {
                return self.error(format!(
                    "Unrecognized character escape ({})",
                    describe(other)
                ));
            }
        };
        text.push(decoded);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u16, JsonParseError> {
        let Some(hex) = self.bytes.get(self.at..self.at + 4) else {
            return self.error("Unexpected end-of-input in character escape sequence");
        };
        let Some(value) = std::str::from_utf8(hex)
            .ok()
            .and_then(|h| u16::from_str_radix(h, 16).ok())
        else {
            return self
                .error("Unexpected character: expected a hex-digit for character escape sequence");
        };
        self.at += 4;
        Ok(value)
    }
}

/// Whether a byte would continue a token (`truex` is not `true`).
fn continues_token(byte: Option<u8>) -> bool {
    matches!(byte, Some(b) if b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80)
}

fn describe(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("'{}' (code {byte})", byte as char)
    } else {
        format!("CTRL-CHAR, code {byte}")
    }
}

/// `ObjectMapper.writeValueAsBytes(node)`: compact JSON as Jackson prints it.
pub(crate) fn write_bytes(node: &JsonNode) -> Vec<u8> {
    let mut out = String::new();
    write_node(node, &mut out);
    out.into_bytes()
}

/// The same text as [`write_bytes`].
pub(crate) fn write_string(node: &JsonNode) -> String {
    let mut out = String::new();
    write_node(node, &mut out);
    out
}

fn write_node(node: &JsonNode, out: &mut String) {
    match node {
        // A missing node writes nothing in Jackson; it never reaches a writer here.
        JsonNode::Missing => {}
        JsonNode::Null => out.push_str("null"),
        JsonNode::Boolean(v) => out.push_str(if *v { "true" } else { "false" }),
        JsonNode::Int(v) => write!(out, "{v}").expect("writing to a String"),
        JsonNode::Long(v) => write!(out, "{v}").expect("writing to a String"),
        JsonNode::BigInteger(v) => out.push_str(&v.to_java_string()),
        JsonNode::Decimal(v) => out.push_str(&v.to_java_string()),
        JsonNode::Float(v) => write_floating(java_float_string(*v), out),
        JsonNode::Double(v) => write_floating(java_double_string(*v), out),
        JsonNode::Text(text) => write_text(text, out),
        JsonNode::Binary(bytes) => {
            out.push('"');
            out.push_str(&STANDARD.encode(bytes));
            out.push('"');
        }
        JsonNode::Array(elements) => {
            out.push('[');
            for (i, element) in elements.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_node(element, out);
            }
            out.push(']');
        }
        JsonNode::Object(members) => {
            out.push('{');
            for (i, (name, value)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_text(name, out);
                out.push(':');
                write_node(value, out);
            }
            out.push('}');
        }
    }
}

/// Jackson quotes non-finite numbers (`QUOTE_NON_NUMERIC_NUMBERS`, on by default).
fn write_floating(text: String, out: &mut String) {
    if text.ends_with("NaN") || text.ends_with("Infinity") {
        out.push('"');
        out.push_str(&text);
        out.push('"');
    } else {
        out.push_str(&text);
    }
}

/// A JSON string with Jackson's escapes: `"` and `\`, the five short control escapes,
/// `\u00XX` (upper-case hex) for other control characters, everything else as is.
fn write_text(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                write!(out, "\\u{:04X}", c as u32).expect("writing to a String");
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Java's `Double.toString`: the shortest digits that read back the same (as JDK 19 and
/// later print them), in plain notation for magnitudes in [10^-3, 10^7) and as
/// `d.dddE±n` otherwise, always with a fraction digit (`1.0`, `1.0E10`).
pub(crate) fn java_double_string(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    java_floating_string(
        value == 0.0,
        value.abs(),
        value.is_sign_negative(),
        &format!("{:e}", value.abs()),
    )
}

/// Java's `Float.toString`, by the same rules over the float's own shortest digits.
pub(crate) fn java_float_string(value: f32) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    java_floating_string(
        value == 0.0,
        f64::from(value.abs()),
        value.is_sign_negative(),
        &format!("{:e}", value.abs()),
    )
}

/// Lays out `scientific` (Rust's shortest `d.ddde±n` of the magnitude) as Java does.
fn java_floating_string(zero: bool, magnitude: f64, negative: bool, scientific: &str) -> String {
    let sign = if negative { "-" } else { "" };
    if zero {
        return format!("{sign}0.0");
    }
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("Rust's {:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (1e-3..1e7).contains(&magnitude) {
        // Plain: the point goes after exponent + 1 digits.
        let point = exponent + 1;
        if point <= 0 {
            let zeros = "0".repeat(point.unsigned_abs() as usize);
            return format!("{sign}0.{zeros}{digits}");
        }
        let point = point as usize;
        if digits.len() <= point {
            let zeros = "0".repeat(point - digits.len());
            return format!("{sign}{digits}{zeros}.0");
        }
        let (integer, fraction) = digits.split_at(point);
        return format!("{sign}{integer}.{fraction}");
    }
    let (first, rest) = digits.split_at(1);
    let rest = if rest.is_empty() { "0" } else { rest };
    format!("{sign}{first}.{rest}E{exponent}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_jackson_kind() {
        let node =
            read_tree(b"[12, 4398046511104, 123456789012345678901234567890, 1.50, 1e3, -0, 0012]")
                .unwrap();
        let JsonNode::Array(elements) = node else {
            panic!("an array")
        };
        assert_eq!(elements[0], JsonNode::Int(12));
        assert_eq!(elements[1], JsonNode::Long(4398046511104));
        assert!(matches!(elements[2], JsonNode::BigInteger(_)));
        assert_eq!(write_string(&elements[2]), "123456789012345678901234567890");
        assert_eq!(write_string(&elements[3]), "1.50");
        assert_eq!(write_string(&elements[4]), "1E+3");
        assert_eq!(elements[5], JsonNode::Int(0));
        // ALLOW_LEADING_ZEROS_FOR_NUMBERS
        assert_eq!(elements[6], JsonNode::Int(12));
    }

    #[test]
    fn accessors_answer_as_jackson_does() {
        assert_eq!(JsonNode::Text("12".into()).int_value(), 0);
        assert_eq!(JsonNode::Long(4294967297).int_value(), 1);
        assert_eq!(read_tree(b"12.99").unwrap().int_value(), 12);
        assert!(!JsonNode::Int(1).boolean_value());
        assert_eq!(JsonNode::Int(1).text_value(), None);
        assert_eq!(
            JsonNode::Text("dGVzdC1zdHJpbmc=".into()).binary_value(),
            Ok(Some(b"test-string".to_vec()))
        );
        assert!(JsonNode::Text("not base64!".into()).binary_value().is_err());
        assert_eq!(JsonNode::Int(1).binary_value(), Ok(None));
    }

    #[test]
    fn reading_follows_read_tree() {
        assert_eq!(read_tree(b"").unwrap(), JsonNode::Missing);
        assert_eq!(read_tree(b"  \n").unwrap(), JsonNode::Missing);
        // Content after the first value is not read.
        assert_eq!(read_tree(b"true false").unwrap(), JsonNode::Boolean(true));
        assert_eq!(read_tree(b"{} xyz").unwrap(), JsonNode::Object(vec![]));
        for bad in [
            &b"12abc"[..],
            b"truex",
            b"[1,]",
            b"{\"a\" 1}",
            b"\"\x01\"",
            b"01.",
            b"+1",
            b".5",
            b"NaN",
            b"\"\\x\"",
            b"[1 2]",
            b"\"open",
        ] {
            assert!(read_tree(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let repeated = read_tree(br#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(write_string(&repeated), r#"{"a":3,"b":2}"#);
        let deep = "[".repeat(NESTING_DEPTH_MAX + 1);
        assert!(read_tree(deep.as_bytes()).is_err());
        let long_number = "1".repeat(NUMBER_LENGTH_MAX + 1);
        assert!(read_tree(long_number.as_bytes()).is_err());
    }

    #[test]
    fn strings_are_escaped_as_jackson_escapes_them() {
        let node = JsonNode::Text("a\"b\\c\n\t\u{1}\u{1f}/é😀\u{7f}".into());
        assert_eq!(
            write_string(&node),
            "\"a\\\"b\\\\c\\n\\t\\u0001\\u001F/é😀\u{7f}\""
        );
        let read = read_tree("\"\\u00e9\\ud83d\\ude00\\/\"".as_bytes()).unwrap();
        assert_eq!(read, JsonNode::Text("é😀/".into()));
    }

    #[test]
    fn floating_numbers_print_as_java_prints_them() {
        // (value, Double.toString(value))
        let doubles = [
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (12.34, "12.34"),
            (100.0, "100.0"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (1234567.0, "1234567.0"),
            (1.0e7, "1.0E7"),
            (1.0e10, "1.0E10"),
            (-1.5e-10, "-1.5E-10"),
            (123456789.123, "1.23456789123E8"),
            (f64::MAX, "1.7976931348623157E308"),
            (f64::MIN_POSITIVE, "2.2250738585072014E-308"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (value, text) in doubles {
            assert_eq!(java_double_string(value), text);
        }
        // (value, Float.toString(value))
        let floats = [
            (12.34f32, "12.34"),
            (1.0e10, "1.0E10"),
            (0.1, "0.1"),
            (3.4028235e38, "3.4028235E38"),
        ];
        for (value, text) in floats {
            assert_eq!(java_float_string(value), text);
        }
        assert_eq!(write_string(&JsonNode::Double(f64::NAN)), "\"NaN\"");
        assert_eq!(
            write_string(&JsonNode::Float(f32::NEG_INFINITY)),
            "\"-Infinity\""
        );
    }
}
