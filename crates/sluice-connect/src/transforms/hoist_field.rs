//! `HoistField$Key` / `HoistField$Value`: wraps the key or value in a struct (or
//! schemaless map) of one field named `field`. With a schema the wrapper is an unnamed
//! required struct whose one field has the original schema.

use crate::ConfigError;
use crate::data::{DataError, Record, Schema, SchemaRef, Struct, Type, Value};

use super::Transform;
use super::config::Options;
use super::support::{Operand, SchemaCache, add_field};

pub(crate) struct HoistField {
    operand: Operand,
    field: String,
    schemas: SchemaCache,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(HoistField::configure(options, Operand::Key)?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(HoistField::configure(options, Operand::Value)?))
}

impl HoistField {
    fn configure(options: &mut Options, operand: Operand) -> Result<HoistField, ConfigError> {
        let field = options.required_string("field");
        options.check()?;
        Ok(HoistField {
            operand,
            field,
            schemas: SchemaCache::new(),
        })
    }
}

impl Transform for HoistField {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        let (schema, value) = self.operand.take(&mut record);
        let Some(schema) = schema else {
            let wrapped = Value::Map(vec![(Value::String(self.field.clone()), value)]);
            self.operand.put(&mut record, None, wrapped);
            return Ok(Some(record));
        };
        let updated_schema: SchemaRef = self.schemas.get_or_build(&schema, |original| {
            let mut wrapper = Schema::new(Type::Struct);
            add_field(&mut wrapper, &self.field, original.clone())?;
            Ok(wrapper)
        })?;
        let wrapped = Struct::new(updated_schema.clone()).with(&self.field, value)?;
        self.operand
            .put(&mut record, Some(updated_schema), Value::Struct(wrapped));
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn transform(operand: Operand) -> HoistField {
        configure(&[("field", "magic")], |o| HoistField::configure(o, operand)).unwrap()
    }

    /// Kafka's `HoistFieldTest.schemaless`.
    #[test]
    fn schemaless_keys_are_wrapped_in_a_map() {
        let record = sink("test", None, Value::Null).with_key(None, Value::Int32(42));
        let out = transform(Operand::Key).apply(record).unwrap().unwrap();
        assert_eq!(out.key_schema, None);
        assert_eq!(out.key, map(&[("magic", Value::Int32(42))]));
    }

    /// Kafka's `HoistFieldTest.withSchema`.
    #[test]
    fn keys_with_a_schema_are_wrapped_in_a_struct() {
        let int: SchemaRef = Schema::new(Type::Int32).into();
        let record = sink("test", None, Value::Null).with_key(Some(int.clone()), Value::Int32(42));
        let out = transform(Operand::Key).apply(record).unwrap().unwrap();
        let expected = schema(&[("magic", Schema::new(Type::Int32))]);
        assert_eq!(out.key_schema.as_ref(), Some(&expected));
        assert_eq!(
            out.key,
            Value::Struct(structure(&expected, &[("magic", Value::Int32(42))]))
        );
    }

    /// A null under a required schema is refused as `Struct.put` refuses it.
    #[test]
    fn a_null_needs_an_optional_schema() {
        let record = sink("t", Some(Schema::new(Type::Int32).into()), Value::Null);
        assert_eq!(
            transform(Operand::Value).apply(record).unwrap_err().0,
            "Invalid value: null used for required field: \"magic\", schema type: INT32"
        );
        let record = sink(
            "t",
            Some(Schema::new(Type::Int32).optional().into()),
            Value::Null,
        );
        let out = transform(Operand::Value).apply(record).unwrap().unwrap();
        assert!(matches!(out.value, Value::Struct(_)));
    }

    #[test]
    fn config_errors() {
        assert_eq!(
            option_errors(&[], |o| HoistField::configure(o, Operand::Value)),
            one_error(
                "field",
                "Missing required configuration \"transforms.t.field\" which has no default value."
            )
        );
    }
}
