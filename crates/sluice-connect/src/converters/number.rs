//! Kafka's primitive converters: `IntegerConverter`, `LongConverter`, `ShortConverter`,
//! `FloatConverter`, `DoubleConverter` (one [`NumberConverter`] per [`NumberKind`]) and
//! `BooleanConverter`. Each writes what Kafka's serializer of that type writes
//! (big-endian, a float or double by its IEEE bits, a boolean as one byte 1 or 0) and
//! reads it back with an optional schema of that type.
//!
//! As in Kafka, the number converters do not look at the schema: a value of another type
//! is refused for its class, not its schema.

use std::sync::Arc;

use super::{Converter, java_class, java_type_name, with_cause};
use crate::data::{DataError, Schema, SchemaRef, Type, Value};

/// The Java type a [`NumberConverter`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberKind {
    Short,
    Integer,
    Long,
    Float,
    Double,
}

impl NumberKind {
    /// The name Kafka's messages use (`"integer"`).
    fn type_name(self) -> &'static str {
        match self {
            NumberKind::Short => "short",
            NumberKind::Integer => "integer",
            NumberKind::Long => "long",
            NumberKind::Float => "float",
            NumberKind::Double => "double",
        }
    }

    fn java_class(self) -> &'static str {
        match self {
            NumberKind::Short => "java.lang.Short",
            NumberKind::Integer => "java.lang.Integer",
            NumberKind::Long => "java.lang.Long",
            NumberKind::Float => "java.lang.Float",
            NumberKind::Double => "java.lang.Double",
        }
    }

    fn connect_type(self) -> Type {
        match self {
            NumberKind::Short => Type::Int16,
            NumberKind::Integer => Type::Int32,
            NumberKind::Long => Type::Int64,
            NumberKind::Float => Type::Float32,
            NumberKind::Double => Type::Float64,
        }
    }

    fn width(self) -> usize {
        match self {
            NumberKind::Short => 2,
            NumberKind::Integer | NumberKind::Float => 4,
            NumberKind::Long | NumberKind::Double => 8,
        }
    }

    /// The deserializer's name in its size error (Kafka's float and double deserializers
    /// call themselves just `Deserializer`).
    fn deserializer_name(self) -> &'static str {
        match self {
            NumberKind::Short => "ShortDeserializer",
            NumberKind::Integer => "IntegerDeserializer",
            NumberKind::Long => "LongDeserializer",
            NumberKind::Float | NumberKind::Double => "Deserializer",
        }
    }
}

/// Kafka's `NumberConverter` of one [`NumberKind`].
#[derive(Debug, Clone)]
pub struct NumberConverter {
    kind: NumberKind,
    schema: SchemaRef,
}

impl NumberConverter {
    pub fn new(kind: NumberKind) -> NumberConverter {
        NumberConverter {
            kind,
            schema: Arc::new(Schema::new(kind.connect_type()).optional()),
        }
    }
}

impl Converter for NumberConverter {
    fn from_connect(
        &self,
        _topic: &str,
        _schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        let bytes = match (self.kind, value) {
            (_, Value::Null) => return Ok(None),
            (NumberKind::Short, Value::Int16(v)) => v.to_be_bytes().to_vec(),
            (NumberKind::Integer, Value::Int32(v)) => v.to_be_bytes().to_vec(),
            (NumberKind::Long, Value::Int64(v)) => v.to_be_bytes().to_vec(),
            // FloatSerializer writes the raw bits; DoubleSerializer uses
            // doubleToLongBits, which writes every NaN as the canonical one.
            (NumberKind::Float, Value::Float32(v)) => v.to_bits().to_be_bytes().to_vec(),
            (NumberKind::Double, Value::Float64(v)) => {
                let bits = if v.is_nan() {
                    0x7ff8_0000_0000_0000
                } else {
                    v.to_bits()
                };
                bits.to_be_bytes().to_vec()
            }
            (kind, other) => {
                return Err(with_cause(
                    &format!(
                        "Failed to serialize to {} (was {}): ",
                        kind.type_name(),
                        java_class(other)
                    ),
                    format_args!(
                        "{} cannot be cast to class {}",
                        java_class(other),
                        kind.java_class()
                    ),
                ));
            }
        };
        Ok(Some(bytes))
    }

    fn to_connect(
        &self,
        _topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        let schema = Some(Arc::clone(&self.schema));
        let Some(bytes) = bytes else {
            return Ok((schema, Value::Null));
        };
        let kind = self.kind;
        if bytes.len() != kind.width() {
            return Err(with_cause(
                &format!("Failed to deserialize {}: ", kind.type_name()),
                format_args!(
                    "Size of data received by {} is not {}",
                    kind.deserializer_name(),
                    kind.width()
                ),
            ));
        }
        let value = match kind {
            NumberKind::Short => Value::Int16(i16::from_be_bytes(array(bytes))),
            NumberKind::Integer => Value::Int32(i32::from_be_bytes(array(bytes))),
            NumberKind::Long => Value::Int64(i64::from_be_bytes(array(bytes))),
            NumberKind::Float => Value::Float32(f32::from_bits(u32::from_be_bytes(array(bytes)))),
            NumberKind::Double => Value::Float64(f64::from_bits(u64::from_be_bytes(array(bytes)))),
        };
        Ok((schema, value))
    }
}

fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    bytes.try_into().expect("the width was checked")
}

/// Kafka's `BooleanConverter`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BooleanConverter;

impl Converter for BooleanConverter {
    fn from_connect(
        &self,
        _topic: &str,
        schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        if let Some(schema) = schema
            && schema.ty != Type::Boolean
        {
            return Err(DataError(format!(
                "Invalid schema type for BooleanConverter: {}",
                java_type_name(schema.ty)
            )));
        }
        match value {
            Value::Null => Ok(None),
            Value::Boolean(v) => Ok(Some(vec![u8::from(*v)])),
            other => Err(DataError(format!(
                "BooleanConverter is not compatible with objects of type {}",
                java_class(other)
            ))),
        }
    }

    fn to_connect(
        &self,
        _topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        let schema = Some(Arc::new(Schema::new(Type::Boolean).optional()));
        let value = match bytes {
            None => Value::Null,
            Some([1]) => Value::Boolean(true),
            Some([0]) => Value::Boolean(false),
            Some([other]) => {
                return Err(with_cause(
                    "Failed to deserialize boolean: ",
                    format_args!(
                        "Unexpected byte received by BooleanDeserializer: {}",
                        *other as i8
                    ),
                ));
            }
            Some(_) => {
                return Err(with_cause(
                    "Failed to deserialize boolean: ",
                    "Size of data received by BooleanDeserializer is not 1",
                ));
            }
        };
        Ok((schema, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (kind, value, Kafka serializer's bytes)
    fn cases() -> Vec<(NumberKind, Value, Vec<u8>)> {
        vec![
            (NumberKind::Short, Value::Int16(-2), vec![0xff, 0xfe]),
            (NumberKind::Integer, Value::Int32(258), vec![0, 0, 1, 2]),
            (
                NumberKind::Integer,
                Value::Int32(i32::MIN),
                vec![0x80, 0, 0, 0],
            ),
            (
                NumberKind::Long,
                Value::Int64(4398046511104),
                vec![0, 0, 4, 0, 0, 0, 0, 0],
            ),
            (
                NumberKind::Float,
                Value::Float32(1.0),
                vec![0x3f, 0x80, 0, 0],
            ),
            (
                NumberKind::Double,
                Value::Float64(-2.5),
                vec![0xc0, 0x04, 0, 0, 0, 0, 0, 0],
            ),
        ]
    }

    #[test]
    fn numbers_round_trip_through_kafka_bytes() {
        for (kind, value, bytes) in cases() {
            let c = NumberConverter::new(kind);
            assert_eq!(c.from_connect("t", None, &value), Ok(Some(bytes.clone())));
            let (schema, read) = c.to_connect("t", Some(&bytes)).unwrap();
            assert_eq!(read, value);
            let schema = schema.unwrap();
            assert!(schema.optional);
            assert_eq!(schema.ty, kind.connect_type());
            assert_eq!(c.from_connect("t", None, &Value::Null), Ok(None));
            assert_eq!(c.to_connect("t", None).unwrap().1, Value::Null);
        }
        // doubleToLongBits: one NaN.
        let nan = f64::from_bits(0x7ff0_0000_0000_0001);
        assert_eq!(
            NumberConverter::new(NumberKind::Double).from_connect("t", None, &Value::Float64(nan)),
            Ok(Some(vec![0x7f, 0xf8, 0, 0, 0, 0, 0, 0]))
        );
    }

    #[test]
    fn numbers_fail_with_kafka_texts() {
        let ints = NumberConverter::new(NumberKind::Integer);
        assert_eq!(
            ints.from_connect("t", None, &Value::Int64(1))
                .unwrap_err()
                .0,
            "Failed to serialize to integer (was class java.lang.Long): class java.lang.Long \
             cannot be cast to class java.lang.Integer"
        );
        assert_eq!(
            ints.to_connect("t", Some(&[1, 2])).unwrap_err().0,
            "Failed to deserialize integer: Size of data received by IntegerDeserializer is not 4"
        );
        assert_eq!(
            NumberConverter::new(NumberKind::Double)
                .to_connect("t", Some(&[1]))
                .unwrap_err()
                .0,
            "Failed to deserialize double: Size of data received by Deserializer is not 8"
        );
    }

    #[test]
    fn booleans_are_one_byte() {
        let c = BooleanConverter;
        assert_eq!(
            c.from_connect("t", None, &Value::Boolean(true)),
            Ok(Some(vec![1]))
        );
        assert_eq!(
            c.from_connect("t", None, &Value::Boolean(false)),
            Ok(Some(vec![0]))
        );
        assert_eq!(
            c.to_connect("t", Some(&[1])).unwrap().1,
            Value::Boolean(true)
        );
        assert_eq!(
            c.to_connect("t", Some(&[0])).unwrap().1,
            Value::Boolean(false)
        );
        assert_eq!(
            c.to_connect("t", Some(&[0xff])).unwrap_err().0,
            "Failed to deserialize boolean: Unexpected byte received by BooleanDeserializer: -1"
        );
        assert_eq!(
            c.to_connect("t", Some(&[])).unwrap_err().0,
            "Failed to deserialize boolean: Size of data received by BooleanDeserializer is not 1"
        );
        let int32: SchemaRef = Arc::new(Schema::new(Type::Int32));
        assert_eq!(
            c.from_connect("t", Some(&int32), &Value::Int32(1))
                .unwrap_err()
                .0,
            "Invalid schema type for BooleanConverter: INT32"
        );
        assert_eq!(
            c.from_connect("t", None, &Value::Int32(1)).unwrap_err().0,
            "BooleanConverter is not compatible with objects of type class java.lang.Integer"
        );
    }
}
