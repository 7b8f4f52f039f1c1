//! Converters: Connect data to and from the bytes of a Kafka record's key or value.
//!
//! Each converter is the one Kafka Connect users name in `key.converter` /
//! `value.converter`, with its settings under those prefixes, and behaves as Apache Kafka
//! 4.1 (and, for Avro, Confluent's converter) does: the same bytes out, the same Connect
//! data in, the same error texts.
//!
//! - [`JsonConverter`] (`org.apache.kafka.connect.json.JsonConverter`): JSON with or
//!   without the `{"schema":...,"payload":...}` envelope.
//! - [`StringConverter`] (`org.apache.kafka.connect.storage.StringConverter`).
//! - [`ByteArrayConverter`] (`org.apache.kafka.connect.converters.ByteArrayConverter`).
//! - [`NumberConverter`] (`IntegerConverter`, `LongConverter`, `ShortConverter`,
//!   `FloatConverter`, `DoubleConverter`) and [`BooleanConverter`]: Kafka's serializers'
//!   big-endian bytes.
//! - [`AvroConverter`] (`io.confluent.connect.avro.AvroConverter`): Avro in Confluent's
//!   wire format against a schema registry; [`AvroCodec`] is its registry-free half.
//! - [`ProtobufConverter`] (`io.confluent.connect.protobuf.ProtobufConverter`): Protobuf
//!   in Confluent's wire format against a schema registry; [`ProtobufData`] is its
//!   registry-free half.
//! - [`JsonSchemaConverter`] (`io.confluent.connect.json.JsonSchemaConverter`): JSON with
//!   a JSON Schema in Confluent's wire format; [`JsonSchemaData`] is its registry-free half.
//!
//! What it is not: header converters (headers travel as bytes, see
//! [`crate::data::Header`]).
//!
//! Errors: a converter fails with Connect's `DataException` text ([`DataError`]). Where
//! Kafka wraps a cause (`Failed to deserialize integer: ` with a `SerializationException`
//! inside), the text is Kafka's followed by the cause's, as Connect's logs show them
//! together. Settings are checked when the converter is built, with `ConfigDef`'s texts on
//! the prefixed key (`value.converter.schemas.enable`), as Connect's `config/validate`
//! reports converter settings.

use crate::data::{DataError, SchemaRef, Value};
use crate::{ConfigError, Props};

mod avro;
mod avro_binary;
mod avro_data;
mod avro_schema;
mod byte_array;
pub(crate) mod decimal;
pub(crate) mod jackson;
mod json;
mod json_schema;
mod json_schema_data;
mod number;
mod protobuf;
mod protobuf_data;
pub mod registry;
mod string;

pub use avro::{AvroCodec, AvroConverter, AvroConverterConfig};
pub use avro_data::{AvroData, AvroDataConfig};
pub use avro_schema::AvroSchema;
pub use byte_array::ByteArrayConverter;
/// Connect's Decimal arithmetic, for connectors that write decimals as numbers.
pub(crate) use decimal::{BigDecimal, BigInteger};
pub use json::{DecimalFormat, JsonConverter, JsonConverterConfig};
pub use json_schema::{JsonSchemaConverter, JsonSchemaConverterConfig};
pub use json_schema_data::{JsonSchemaData, JsonSchemaDataConfig};
pub use number::{BooleanConverter, NumberConverter, NumberKind};
pub use protobuf::{ProtobufConverter, ProtobufConverterConfig};
pub use protobuf_data::{GeneratedSchema, ProtobufData, ProtobufDataConfig};
pub use string::StringConverter;

/// A converter of one side (key or value) of a connector's records: Connect's
/// `Converter`. The methods are Connect's `fromConnectData` and `toConnectData`.
#[allow(clippy::wrong_self_convention)] // Connect's names: `from_connect` converts from Connect data.
pub trait Converter: Send + Sync {
    /// Connect data -> bytes (Kafka's `fromConnectData`). None for a null value (a
    /// tombstone).
    fn from_connect(
        &self,
        topic: &str,
        schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError>;

    /// bytes -> Connect data (`toConnectData`). None bytes means a null record value.
    fn to_connect(
        &self,
        topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError>;
}

pub const JSON_CONVERTER: &str = "org.apache.kafka.connect.json.JsonConverter";
pub const STRING_CONVERTER: &str = "org.apache.kafka.connect.storage.StringConverter";
pub const BYTE_ARRAY_CONVERTER: &str = "org.apache.kafka.connect.converters.ByteArrayConverter";
pub const INTEGER_CONVERTER: &str = "org.apache.kafka.connect.converters.IntegerConverter";
pub const LONG_CONVERTER: &str = "org.apache.kafka.connect.converters.LongConverter";
pub const SHORT_CONVERTER: &str = "org.apache.kafka.connect.converters.ShortConverter";
pub const FLOAT_CONVERTER: &str = "org.apache.kafka.connect.converters.FloatConverter";
pub const DOUBLE_CONVERTER: &str = "org.apache.kafka.connect.converters.DoubleConverter";
pub const BOOLEAN_CONVERTER: &str = "org.apache.kafka.connect.converters.BooleanConverter";
pub const AVRO_CONVERTER: &str = "io.confluent.connect.avro.AvroConverter";
pub const PROTOBUF_CONVERTER: &str = "io.confluent.connect.protobuf.ProtobufConverter";
pub const JSON_SCHEMA_CONVERTER: &str = "io.confluent.connect.json.JsonSchemaConverter";

/// Every converter class this runtime has, by full class name.
pub const CONVERTER_CLASSES: [&str; 12] = [
    JSON_CONVERTER,
    STRING_CONVERTER,
    BYTE_ARRAY_CONVERTER,
    INTEGER_CONVERTER,
    LONG_CONVERTER,
    SHORT_CONVERTER,
    FLOAT_CONVERTER,
    DOUBLE_CONVERTER,
    BOOLEAN_CONVERTER,
    AVRO_CONVERTER,
    PROTOBUF_CONVERTER,
    JSON_SCHEMA_CONVERTER,
];

/// The full class name `class` names: the name itself, or one of the aliases Connect's
/// plugin loader registers (the simple class name, `JsonConverter`, and the simple name
/// without its `Converter` suffix, `Json`).
pub fn resolve_class(class: &str) -> Option<&'static str> {
    let class = class.trim();
    CONVERTER_CLASSES.into_iter().find(|full| {
        let simple = full.rsplit('.').next().expect("split yields one piece");
        *full == class || simple == class || simple.strip_suffix("Converter") == Some(class)
    })
}

/// Builds a converter by its Java class name, from the props with the
/// `key.converter.`/`value.converter.` prefix already stripped (e.g.
/// `{"schemas.enable": "false"}`). An unknown class is a [`ConfigError`] on
/// `config_key` ("key.converter" or "value.converter") with Connect's text; a bad setting
/// is one on the prefixed setting's key.
pub fn converter(
    class: &str,
    props: &Props,
    is_key: bool,
    config_key: &str,
) -> Result<Box<dyn Converter>, ConfigError> {
    let Some(full) = resolve_class(class) else {
        return Err(ConfigError::invalid(
            config_key,
            class,
            &format!("Class {class} could not be found."),
        ));
    };
    let settings = Settings::new(props, config_key);
    Ok(match full {
        JSON_CONVERTER => Box::new(JsonConverter::new(JsonConverterConfig::parse(&settings)?)?),
        STRING_CONVERTER => Box::new(StringConverter::configure(&settings)?),
        BYTE_ARRAY_CONVERTER => Box::new(ByteArrayConverter),
        INTEGER_CONVERTER => Box::new(NumberConverter::new(NumberKind::Integer)),
        LONG_CONVERTER => Box::new(NumberConverter::new(NumberKind::Long)),
        SHORT_CONVERTER => Box::new(NumberConverter::new(NumberKind::Short)),
        FLOAT_CONVERTER => Box::new(NumberConverter::new(NumberKind::Float)),
        DOUBLE_CONVERTER => Box::new(NumberConverter::new(NumberKind::Double)),
        BOOLEAN_CONVERTER => Box::new(BooleanConverter),
        AVRO_CONVERTER => Box::new(AvroConverter::new(
            AvroConverterConfig::parse(&settings)?,
            is_key,
        )?),
        PROTOBUF_CONVERTER => Box::new(ProtobufConverter::new(
            ProtobufConverterConfig::parse(&settings)?,
            is_key,
        )?),
        JSON_SCHEMA_CONVERTER => Box::new(JsonSchemaConverter::new(
            JsonSchemaConverterConfig::parse(&settings)?,
            is_key,
        )?),
        _ => unreachable!("resolve_class answers one of CONVERTER_CLASSES"),
    })
}

/// A converter's settings, read as Kafka's `ConfigDef` parses them (values trimmed,
/// booleans case-insensitive), with errors on the prefixed key.
pub struct Settings<'a> {
    props: &'a Props,
    config_key: &'a str,
}

impl<'a> Settings<'a> {
    pub fn new(props: &'a Props, config_key: &'a str) -> Settings<'a> {
        Settings { props, config_key }
    }

    /// The key an error on `name` is reported on: `value.converter.schemas.enable`.
    pub fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.config_key)
    }

    /// A `STRING` setting, trimmed.
    pub fn string(&self, name: &str) -> Option<&'a str> {
        self.props.get(name).map(|v| v.trim())
    }

    /// A `BOOLEAN` setting.
    pub fn boolean(&self, name: &str, default: bool) -> Result<bool, ConfigError> {
        let Some(value) = self.props.get(name) else {
            return Ok(default);
        };
        let trimmed = value.trim();
        if trimmed.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if trimmed.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err(self.invalid(name, value, "Expected value to be either true or false"))
        }
    }

    /// An `INT` setting.
    pub fn int(&self, name: &str, default: i32) -> Result<i32, ConfigError> {
        let Some(value) = self.props.get(name) else {
            return Ok(default);
        };
        value
            .trim()
            .parse()
            .map_err(|_| self.invalid(name, value, "Not a number of type INT"))
    }

    /// `Invalid value V for configuration NAME: REASON` on the prefixed key.
    pub fn invalid(&self, name: &str, value: &str, reason: &str) -> ConfigError {
        ConfigError::new(
            self.key(name),
            format!("Invalid value {value} for configuration {name}: {reason}"),
        )
    }

    /// A required setting with no value and no default.
    pub fn missing(&self, name: &str) -> ConfigError {
        ConfigError::new(
            self.key(name),
            format!("Missing required configuration \"{name}\" which has no default value."),
        )
    }
}

/// Java's `Schema.Type` constant names (`INT8`, `FLOAT64`), as Kafka's messages print a
/// schema's type.
pub(crate) fn java_type_name(ty: crate::data::Type) -> &'static str {
    use crate::data::Type;
    match ty {
        Type::Int8 => "INT8",
        Type::Int16 => "INT16",
        Type::Int32 => "INT32",
        Type::Int64 => "INT64",
        Type::Float32 => "FLOAT32",
        Type::Float64 => "FLOAT64",
        Type::Boolean => "BOOLEAN",
        Type::String => "STRING",
        Type::Bytes => "BYTES",
        Type::Array => "ARRAY",
        Type::Map => "MAP",
        Type::Struct => "STRUCT",
    }
}

/// `value.getClass()` as Java prints a class (`class java.lang.String`).
pub(crate) fn java_class(value: &Value) -> String {
    format!("class {}", value.java_class())
}

/// Kafka's text for a failure with a cause: the message, then the cause's (after `": "`
/// unless Kafka's message already ends with a colon).
pub(crate) fn with_cause(message: &str, cause: impl std::fmt::Display) -> DataError {
    let separator = if message.ends_with(": ") {
        ""
    } else if message.ends_with(':') {
        " "
    } else {
        ": "
    };
    DataError(format!("{message}{separator}{cause}"))
}

/// A map of at most `capacity` entries that drops its oldest entry to make room: the
/// bound on every schema cache here (a capacity of 0 caches nothing).
#[derive(Debug)]
pub(crate) struct BoundedCache<K, V> {
    capacity: usize,
    entries: std::collections::HashMap<K, V>,
    order: std::collections::VecDeque<K>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> BoundedCache<K, V> {
    pub(crate) fn new(capacity: usize) -> BoundedCache<K, V> {
        BoundedCache {
            capacity,
            entries: std::collections::HashMap::new(),
            order: std::collections::VecDeque::new(),
        }
    }

    pub(crate) fn get(&self, key: &K) -> Option<V> {
        self.entries.get(key).cloned()
    }

    pub(crate) fn insert(&mut self, key: K, value: V) {
        if self.capacity == 0 {
            return;
        }
        if let Some(existing) = self.entries.get_mut(&key) {
            *existing = value;
            return;
        }
        while self.entries.len() >= self.capacity {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        self.order.push_back(key.clone());
        self.entries.insert(key, value);
        debug_assert_eq!(self.entries.len(), self.order.len());
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_resolve_by_name_and_alias() {
        assert_eq!(resolve_class(JSON_CONVERTER), Some(JSON_CONVERTER));
        assert_eq!(resolve_class(" JsonConverter "), Some(JSON_CONVERTER));
        assert_eq!(resolve_class("Json"), Some(JSON_CONVERTER));
        assert_eq!(resolve_class("ByteArray"), Some(BYTE_ARRAY_CONVERTER));
        assert_eq!(resolve_class("AvroConverter"), Some(AVRO_CONVERTER));
        assert_eq!(resolve_class("Protobuf"), Some(PROTOBUF_CONVERTER));
        assert_eq!(
            resolve_class("JsonSchemaConverter"),
            Some(JSON_SCHEMA_CONVERTER)
        );
        assert_eq!(resolve_class("JsonSchema"), Some(JSON_SCHEMA_CONVERTER));
        assert_eq!(resolve_class("org.example.Nope"), None);
        assert_eq!(resolve_class("jsonconverter"), None);
    }

    #[test]
    fn an_unknown_class_is_refused_with_connect_text() {
        let error = converter("org.example.Nope", &Props::new(), false, "value.converter")
            .err()
            .expect("refused");
        assert_eq!(
            error.errors,
            vec![(
                "value.converter".to_string(),
                "Invalid value org.example.Nope for configuration value.converter: Class \
                 org.example.Nope could not be found."
                    .to_string()
            )]
        );
    }

    #[test]
    fn settings_parse_as_config_def_does() {
        let props: Props = [
            ("a".to_string(), " TRUE ".to_string()),
            ("b".to_string(), "yes".to_string()),
            ("c".to_string(), " 12 ".to_string()),
            ("d".to_string(), "x".to_string()),
        ]
        .into();
        let settings = Settings::new(&props, "key.converter");
        assert_eq!(settings.boolean("a", false), Ok(true));
        assert_eq!(settings.boolean("missing", true), Ok(true));
        assert_eq!(
            settings.boolean("b", true).unwrap_err().errors,
            vec![(
                "key.converter.b".to_string(),
                "Invalid value yes for configuration b: Expected value to be either true or false"
                    .to_string()
            )]
        );
        assert_eq!(settings.int("c", 0), Ok(12));
        assert_eq!(
            settings.int("d", 0).unwrap_err().message(),
            "Invalid value x for configuration d: Not a number of type INT"
        );
        assert_eq!(
            settings.missing("schema.registry.url").message(),
            "Missing required configuration \"schema.registry.url\" which has no default value."
        );
    }
}
