//! Kafka's `ByteArrayConverter`: record bytes as they are, to and from a Connect `BYTES`
//! value. Anything but bytes (or null) is refused, with Kafka's texts.

use std::sync::Arc;

use super::{Converter, java_class, java_type_name};
use crate::data::{DataError, Schema, SchemaRef, Type, Value};

/// Kafka's `ByteArrayConverter`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByteArrayConverter;

impl Converter for ByteArrayConverter {
    fn from_connect(
        &self,
        _topic: &str,
        schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        if let Some(schema) = schema
            && schema.ty != Type::Bytes
        {
            return Err(DataError(format!(
                "Invalid schema type for ByteArrayConverter: {}",
                java_type_name(schema.ty)
            )));
        }
        match value {
            Value::Null => Ok(None),
            Value::Bytes(bytes) => Ok(Some(bytes.clone())),
            other => Err(DataError(format!(
                "ByteArrayConverter is not compatible with objects of type {}",
                java_class(other)
            ))),
        }
    }

    fn to_connect(
        &self,
        _topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        let value = bytes.map_or(Value::Null, |b| Value::Bytes(b.to_vec()));
        Ok((Some(Arc::new(Schema::new(Type::Bytes).optional())), value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Cases from Kafka's ByteArrayConverterTest.
    #[test]
    fn bytes_pass_through_both_ways() {
        let c = ByteArrayConverter;
        let schema: SchemaRef = Arc::new(Schema::new(Type::Bytes));
        assert_eq!(
            c.from_connect("topic", Some(&schema), &Value::Bytes(b"sample".to_vec())),
            Ok(Some(b"sample".to_vec()))
        );
        assert_eq!(
            c.from_connect("topic", None, &Value::Bytes(b"sample".to_vec())),
            Ok(Some(b"sample".to_vec()))
        );
        assert_eq!(
            c.from_connect("topic", Some(&schema), &Value::Null),
            Ok(None)
        );
        let (schema, value) = c.to_connect("topic", Some(b"sample")).unwrap();
        assert_eq!(
            schema.as_deref(),
            Some(&Schema::new(Type::Bytes).optional())
        );
        assert_eq!(value, Value::Bytes(b"sample".to_vec()));
        assert_eq!(c.to_connect("topic", None).unwrap().1, Value::Null);
    }

    #[test]
    fn other_types_are_refused() {
        let c = ByteArrayConverter;
        let int32: SchemaRef = Arc::new(Schema::new(Type::Int32));
        assert_eq!(
            c.from_connect("topic", Some(&int32), &Value::Int32(12)),
            Err(DataError(
                "Invalid schema type for ByteArrayConverter: INT32".into()
            ))
        );
        assert_eq!(
            c.from_connect("topic", None, &Value::String("x".into())),
            Err(DataError(
                "ByteArrayConverter is not compatible with objects of type class java.lang.String"
                    .into()
            ))
        );
    }
}
