//! `ValueToKey`: replaces the key with a struct (or schemaless map) of the named value
//! fields, in the configured order. The key schema is an unnamed struct of the value
//! fields' schemas; a field the value schema lacks is an error, while a schemaless value
//! lacking a field gives a null entry.

use crate::ConfigError;
use crate::data::{DataError, Record, Schema, Struct, Type, Value};

use super::Transform;
use super::config::Options;
use super::support::{SchemaCache, add_field, map_get, require_map, require_struct, struct_get};

const PURPOSE: &str = "copying fields from value to key";

pub(crate) struct ValueToKey {
    fields: Vec<String>,
    replace_null_with_default: bool,
    schemas: SchemaCache,
}

pub(crate) fn value_to_key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(ValueToKey::configure(options)?))
}

impl ValueToKey {
    fn configure(options: &mut Options) -> Result<ValueToKey, ConfigError> {
        let fields = options.non_empty_list("fields");
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        options.check()?;
        Ok(ValueToKey {
            fields,
            replace_null_with_default,
            schemas: SchemaCache::new(),
        })
    }

    fn key_schema(&self, value_schema: &Schema) -> Result<Schema, DataError> {
        let mut key = Schema::new(Type::Struct);
        for name in &self.fields {
            let Some(field) = value_schema.get_field(name) else {
                return Err(DataError(format!("Field does not exist: {name}")));
            };
            add_field(&mut key, name, field.schema.clone())?;
        }
        Ok(key)
    }
}

impl Transform for ValueToKey {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        if record.value_schema.is_none() {
            let value = require_map(&record.value, PURPOSE)?;
            let key = self
                .fields
                .iter()
                .map(|name| {
                    let field_value = map_get(value, name).cloned().unwrap_or(Value::Null);
                    (Value::String(name.clone()), field_value)
                })
                .collect();
            record.key_schema = None;
            record.key = Value::Map(key);
            return Ok(Some(record));
        }

        let value = require_struct(&record.value, PURPOSE)?;
        let key_schema = self
            .schemas
            .get_or_build(&value.schema, |s| self.key_schema(s))?;
        let mut key = Struct::new(key_schema.clone());
        for name in &self.fields {
            key.put(
                name,
                struct_get(value, name, self.replace_null_with_default)?,
            )?;
        }
        // Kafka sets the value schema to the struct's own schema.
        record.value_schema = Some(value.schema.clone());
        record.key_schema = Some(key_schema);
        record.key = Value::Struct(key);
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn transform(config: &[(&str, &str)]) -> ValueToKey {
        configure(config, ValueToKey::configure).unwrap()
    }

    /// Kafka's `ValueToKeyTest.schemaless`.
    #[test]
    fn schemaless_fields_become_the_key() {
        let xform = transform(&[("fields", "a,b")]);
        let value = map(&[
            ("a", Value::Int32(1)),
            ("b", Value::Int32(2)),
            ("c", Value::Int32(3)),
        ]);
        let out = xform.apply(sink("", None, value.clone())).unwrap().unwrap();
        assert_eq!(out.key_schema, None);
        assert_eq!(
            out.key,
            map(&[("a", Value::Int32(1)), ("b", Value::Int32(2))])
        );
        assert_eq!(out.value, value);
    }

    /// Kafka's `ValueToKeyTest.withSchema`.
    #[test]
    fn struct_fields_become_the_key() {
        let xform = transform(&[("fields", "a,b")]);
        let int = || Schema::new(Type::Int32);
        let value_schema = schema(&[("a", int()), ("b", int()), ("c", int())]);
        let value = structure(
            &value_schema,
            &[
                ("a", Value::Int32(1)),
                ("b", Value::Int32(2)),
                ("c", Value::Int32(3)),
            ],
        );
        let out = xform
            .apply(sink("", Some(value_schema), Value::Struct(value)))
            .unwrap()
            .unwrap();
        let expected_schema = schema(&[("a", int()), ("b", int())]);
        assert_eq!(out.key_schema.as_ref(), Some(&expected_schema));
        assert_eq!(
            out.key,
            Value::Struct(structure(
                &expected_schema,
                &[("a", Value::Int32(1)), ("b", Value::Int32(2))]
            ))
        );
    }

    /// Kafka's `ValueToKeyTest.nonExistingField`.
    #[test]
    fn a_missing_field_is_refused() {
        let xform = transform(&[("fields", "not_exist")]);
        let value_schema = schema(&[("a", Schema::new(Type::Int32))]);
        let value = structure(&value_schema, &[("a", Value::Int32(1))]);
        assert_eq!(
            xform
                .apply(sink("", Some(value_schema), Value::Struct(value)))
                .unwrap_err()
                .0,
            "Field does not exist: not_exist"
        );
        assert_eq!(
            xform.apply(sink("", None, Value::Null)).unwrap_err().0,
            "Only Map objects supported in absence of schema for [copying fields from value to key], found: null"
        );
    }

    /// Kafka's `ValueToKeyTest.testReplaceNullWithDefaultConfig`.
    #[test]
    fn null_fields_read_as_their_default_unless_configured_otherwise() {
        for (replace, expected) in [("false", Value::Null), ("true", Value::Int32(42))] {
            let xform = transform(&[
                ("fields", "optional_with_default"),
                ("replace.null.with.default", replace),
            ]);
            let value_schema = schema(&[(
                "optional_with_default",
                Schema::new(Type::Int32)
                    .optional()
                    .with_default(Value::Int32(42)),
            )]);
            let value = Value::Struct(Struct::new(value_schema.clone()));
            let out = xform
                .apply(sink("", Some(value_schema), value))
                .unwrap()
                .unwrap();
            let Value::Struct(key) = out.key else {
                panic!("a struct key")
            };
            assert_eq!(key.values[0], expected);
        }
    }

    #[test]
    fn config_errors() {
        assert_eq!(
            option_errors(&[("fields", " ")], ValueToKey::configure),
            one_error(
                "fields",
                "Invalid value [] for configuration fields: Empty list"
            )
        );
    }
}
