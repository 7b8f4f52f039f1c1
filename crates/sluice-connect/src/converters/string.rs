//! Kafka's `StringConverter`: any value as its Java `toString()` in a character set
//! (`converter.encoding`, UTF-8 by default), and bytes back as an optional string.
//!
//! Character sets: Java's names and aliases for UTF-8, US-ASCII, ISO-8859-1, UTF-16,
//! UTF-16BE and UTF-16LE, the ones Java guarantees on every platform. As Java's
//! `new String(bytes, charset)` and `String.getBytes(charset)` do, bytes that are not in
//! the character set read as U+FFFD and characters it cannot hold are written as `?`.

use std::sync::Arc;

use super::{Converter, Settings};
use crate::ConfigError;
use crate::data::{DataError, Schema, SchemaRef, Type, Value};

/// `StringConverterConfig.ENCODING_CONFIG`.
pub const ENCODING_CONFIG: &str = "converter.encoding";

/// A character set Java guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    Utf8,
    UsAscii,
    Iso8859_1,
    /// Big-endian with a byte-order mark when writing; reading honours a mark.
    Utf16,
    Utf16Be,
    Utf16Le,
}

impl Charset {
    /// `Charset.forName`: canonical names and the usual aliases, case-insensitive.
    pub fn for_name(name: &str) -> Option<Charset> {
        let lower = name.to_ascii_lowercase();
        Some(match lower.as_str() {
            "utf-8" | "utf8" | "unicode-1-1-utf-8" => Charset::Utf8,
            "us-ascii" | "ascii" | "iso646-us" | "us" | "ascii7" | "646" | "cp367" | "ibm367"
            | "iso_646.irv:1991" | "iso-ir-6" | "ansi_x3.4-1968" | "ansi_x3.4-1986" | "csascii"
            | "default" => Charset::UsAscii,
            "iso-8859-1" | "iso8859_1" | "iso8859-1" | "iso_8859-1" | "iso_8859_1" | "latin1"
            | "l1" | "ibm819" | "cp819" | "csisolatin1" | "819" | "ibm-819" | "iso-ir-100"
            | "iso_8859-1:1987" | "8859_1" => Charset::Iso8859_1,
            "utf-16" | "utf16" | "utf_16" | "unicode" => Charset::Utf16,
            "utf-16be" | "utf_16be" | "x-utf-16be" | "iso-10646-ucs-2" | "unicodebigunmarked" => {
                Charset::Utf16Be
            }
            "utf-16le" | "utf_16le" | "x-utf-16le" | "unicodelittleunmarked" => Charset::Utf16Le,
            _ => return None,
        })
    }

    pub fn encode(self, text: &str) -> Vec<u8> {
        match self {
            Charset::Utf8 => text.as_bytes().to_vec(),
            Charset::UsAscii => text
                .chars()
                .map(|c| if c.is_ascii() { c as u8 } else { b'?' })
                .collect(),
            Charset::Iso8859_1 => text
                .chars()
                .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                .collect(),
            Charset::Utf16 => [0xfe, 0xff]
                .into_iter()
                .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
                .collect(),
            Charset::Utf16Be => text.encode_utf16().flat_map(u16::to_be_bytes).collect(),
            Charset::Utf16Le => text.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        }
    }

    pub fn decode(self, bytes: &[u8]) -> String {
        match self {
            Charset::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Charset::UsAscii => bytes
                .iter()
                .map(|&b| {
                    if b.is_ascii() {
                        b as char
                    } else {
                        char::REPLACEMENT_CHARACTER
                    }
                })
                .collect(),
            Charset::Iso8859_1 => bytes.iter().map(|&b| char::from(b)).collect(),
            Charset::Utf16 => match bytes {
                [0xfe, 0xff, rest @ ..] => decode_utf16(rest, u16::from_be_bytes),
                [0xff, 0xfe, rest @ ..] => decode_utf16(rest, u16::from_le_bytes),
                _ => decode_utf16(bytes, u16::from_be_bytes),
            },
            Charset::Utf16Be => decode_utf16(bytes, u16::from_be_bytes),
            Charset::Utf16Le => decode_utf16(bytes, u16::from_le_bytes),
        }
    }
}

fn decode_utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> String {
    let units = bytes.chunks_exact(2).map(|pair| unit([pair[0], pair[1]]));
    let mut text: String = char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect();
    if bytes.len() % 2 == 1 {
        text.push(char::REPLACEMENT_CHARACTER);
    }
    text
}

/// Kafka's `StringConverter`.
#[derive(Debug, Clone)]
pub struct StringConverter {
    charset: Charset,
    schema: SchemaRef,
}

impl StringConverter {
    pub fn new(charset: Charset) -> StringConverter {
        StringConverter {
            charset,
            schema: Arc::new(Schema::new(Type::String).optional()),
        }
    }

    /// From the converter's settings (`converter.encoding`). An unknown character set is
    /// refused with the text of Kafka's `StringSerializer`.
    pub fn configure(settings: &Settings<'_>) -> Result<StringConverter, ConfigError> {
        let charset = match settings.string(ENCODING_CONFIG) {
            None => Charset::Utf8,
            Some(name) => Charset::for_name(name).ok_or_else(|| {
                ConfigError::new(
                    settings.key(ENCODING_CONFIG),
                    format!("Unsupported encoding {name}"),
                )
            })?,
        };
        Ok(StringConverter::new(charset))
    }
}

impl Converter for StringConverter {
    fn from_connect(
        &self,
        _topic: &str,
        _schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        if value.is_null() {
            return Ok(None);
        }
        Ok(Some(self.charset.encode(&value.to_string())))
    }

    fn to_connect(
        &self,
        _topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        let value = match bytes {
            None => Value::Null,
            Some(bytes) => Value::String(self.charset.decode(bytes)),
        };
        Ok((Some(Arc::clone(&self.schema)), value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Props;

    fn converter(props: &[(&str, &str)]) -> Result<StringConverter, ConfigError> {
        let props: Props = props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        StringConverter::configure(&Settings::new(&props, "value.converter"))
    }

    // Cases from Kafka's StringConverterTest.
    #[test]
    fn strings_and_other_values_serialize_as_java_prints_them() {
        let c = converter(&[]).unwrap();
        let schema: SchemaRef = Arc::new(Schema::new(Type::String));
        assert_eq!(
            c.from_connect("topic", Some(&schema), &Value::String("foo-bar-baz".into())),
            Ok(Some(b"foo-bar-baz".to_vec()))
        );
        assert_eq!(
            c.from_connect("topic", None, &Value::Int32(12)),
            Ok(Some(b"12".to_vec()))
        );
        assert_eq!(
            c.from_connect("topic", None, &Value::Float64(1.0)),
            Ok(Some(b"1.0".to_vec()))
        );
        assert_eq!(
            c.from_connect("topic", Some(&schema), &Value::Null),
            Ok(None)
        );
    }

    #[test]
    fn bytes_read_as_an_optional_string() {
        let c = converter(&[]).unwrap();
        let (schema, value) = c.to_connect("topic", Some(b"foo-bar-baz")).unwrap();
        assert_eq!(
            schema.as_deref(),
            Some(&Schema::new(Type::String).optional())
        );
        assert_eq!(value, Value::String("foo-bar-baz".into()));
        let (schema, value) = c.to_connect("topic", None).unwrap();
        assert!(schema.is_some());
        assert_eq!(value, Value::Null);
        let (_, value) = c.to_connect("topic", Some(b"")).unwrap();
        assert_eq!(value, Value::String(String::new()));
        let (_, value) = c.to_connect("topic", Some(&[b'a', 0xff])).unwrap();
        assert_eq!(value, Value::String("a\u{fffd}".into()));
    }

    #[test]
    fn the_encoding_is_configurable() {
        let c = converter(&[(ENCODING_CONFIG, "UTF-16")]).unwrap();
        let bytes = c
            .from_connect("topic", None, &Value::String("hé".into()))
            .unwrap()
            .unwrap();
        assert_eq!(bytes, [0xfe, 0xff, 0, b'h', 0, 0xe9]);
        assert_eq!(
            c.to_connect("topic", Some(&bytes)).unwrap().1,
            Value::String("hé".into())
        );
        let latin = converter(&[(ENCODING_CONFIG, "latin1")]).unwrap();
        assert_eq!(
            latin.from_connect("t", None, &Value::String("hé€".into())),
            Ok(Some(vec![b'h', 0xe9, b'?']))
        );
        let le = converter(&[(ENCODING_CONFIG, "UTF-16LE")]).unwrap();
        assert_eq!(
            le.to_connect("t", Some(&[b'h', 0, 0xe9])).unwrap().1,
            Value::String("h\u{fffd}".into())
        );
        assert_eq!(
            converter(&[(ENCODING_CONFIG, "EBCDIC-ish")])
                .unwrap_err()
                .errors,
            vec![(
                "value.converter.converter.encoding".to_string(),
                "Unsupported encoding EBCDIC-ish".to_string()
            )]
        );
    }
}
