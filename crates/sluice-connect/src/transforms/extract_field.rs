//! `ExtractField$Key` / `ExtractField$Value`: replaces the key or value with one of its
//! fields (with `field.syntax.version=V2`, a nested one: KIP-821). With a schema the
//! result takes the field's schema, and a field the schema lacks is an error; without,
//! a missing field is null. A null key or value stays null (with a schema, under the
//! field's schema).

use crate::ConfigError;
use crate::data::{DataError, Record, Value};

use super::Transform;
use super::config::Options;
use super::field_path::{FieldSyntaxVersion, SingleFieldPath};
use super::support::{Operand, require_map, require_struct};

const PURPOSE: &str = "field extraction";

pub(crate) struct ExtractField {
    operand: Operand,
    path: SingleFieldPath,
    original_path: String,
    replace_null_with_default: bool,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(ExtractField::configure(options, Operand::Key)?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(ExtractField::configure(options, Operand::Value)?))
}

impl ExtractField {
    pub(crate) fn configure(
        options: &mut Options,
        operand: Operand,
    ) -> Result<ExtractField, ConfigError> {
        let original_path = options.required_string("field");
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        let version = FieldSyntaxVersion::from_options(options);
        options.check()?;
        let path = match SingleFieldPath::parse(&original_path, version) {
            Ok(path) => path,
            Err(message) => return options.fail("field", message),
        };
        Ok(ExtractField {
            operand,
            path,
            original_path,
            replace_null_with_default,
        })
    }

    /// The record with its operand replaced by the field.
    pub(crate) fn extract(&self, mut record: Record) -> Result<Record, DataError> {
        let Some(schema) = self.operand.schema(&record) else {
            let extracted = match self.operand.value(&record) {
                Value::Null => Value::Null,
                value => self.path.value_from_map(require_map(value, PURPOSE)?)?,
            };
            self.operand.put(&mut record, None, extracted);
            return Ok(record);
        };
        let value = match self.operand.value(&record) {
            Value::Null => None,
            value => Some(require_struct(value, PURPOSE)?),
        };
        let Some(field) = self.path.field_from(schema)? else {
            return Err(DataError(format!("Unknown field: {}", self.original_path)));
        };
        let field_schema = field.schema.clone();
        let extracted = match value {
            None => Value::Null,
            Some(value) => self
                .path
                .value_from_struct(value, self.replace_null_with_default)?,
        };
        self.operand.put(&mut record, Some(field_schema), extracted);
        Ok(record)
    }
}

impl Transform for ExtractField {
    fn apply(&self, record: Record) -> Result<Option<Record>, DataError> {
        self.extract(record).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::{Schema, SchemaRef, Struct, Type};

    fn transform(operand: Operand, config: &[(&str, &str)]) -> ExtractField {
        configure(config, |o| ExtractField::configure(o, operand)).unwrap()
    }

    fn key_record(schema: Option<SchemaRef>, key: Value) -> Record {
        sink("test", None, Value::Null).with_key(schema, key)
    }

    const V2: (&str, &str) = ("field.syntax.version", "V2");

    /// Kafka's `ExtractFieldTest.schemaless`, `schemalessAndNestedPath`,
    /// `nullSchemaless`, `nonExistentFieldSchemalessShouldReturnNull` and
    /// `nonExistentNestedFieldSchemalessShouldReturnNull`.
    #[test]
    fn schemaless_fields_are_extracted() {
        let cases: &[(Pairs, Value, Value)] = &[
            (
                &[("field", "magic")],
                map(&[("magic", Value::Int32(42))]),
                Value::Int32(42),
            ),
            (
                &[("field", "magic.foo"), V2],
                map(&[("magic", map(&[("foo", Value::Int32(42))]))]),
                Value::Int32(42),
            ),
            (&[("field", "magic")], Value::Null, Value::Null),
            (
                &[("field", "nonexistent")],
                map(&[("magic", Value::Int32(42))]),
                Value::Null,
            ),
            (
                &[("field", "magic.nonexistent"), V2],
                map(&[("magic", map(&[("foo", Value::Int32(42))]))]),
                Value::Null,
            ),
            // Without V2 a dotted name is one top-level field.
            (
                &[("field", "magic.foo")],
                map(&[("magic.foo", Value::Int32(7))]),
                Value::Int32(7),
            ),
        ];
        for (config, key, expected) in cases {
            let out = transform(Operand::Key, config)
                .apply(key_record(None, key.clone()))
                .unwrap()
                .unwrap();
            assert_eq!(out.key_schema, None);
            assert_eq!(&out.key, expected, "{config:?}");
        }
    }

    /// Kafka's `ExtractFieldTest.withSchema`, `withSchemaAndNestedPath` and
    /// `testNullWithSchema`.
    #[test]
    fn struct_fields_are_extracted_with_their_schema() {
        let int = || Schema::new(Type::Int32);
        let key_schema = schema(&[("magic", int())]);
        let key = structure(&key_schema, &[("magic", Value::Int32(42))]);
        let out = transform(Operand::Key, &[("field", "magic")])
            .apply(key_record(Some(key_schema.clone()), Value::Struct(key)))
            .unwrap()
            .unwrap();
        assert_eq!(out.key_schema.as_deref(), Some(&int()));
        assert_eq!(out.key, Value::Int32(42));

        let foo_schema = schema(&[("foo", int())]);
        let nested_schema = schema(&[("magic", (*foo_schema).clone())]);
        let foo = structure(&foo_schema, &[("foo", Value::Int32(42))]);
        let nested = structure(&nested_schema, &[("magic", Value::Struct(foo))]);
        let out = transform(Operand::Key, &[("field", "magic.foo"), V2])
            .apply(key_record(Some(nested_schema), Value::Struct(nested)))
            .unwrap()
            .unwrap();
        assert_eq!(out.key_schema.as_deref(), Some(&int()));
        assert_eq!(out.key, Value::Int32(42));

        let optional: SchemaRef = Schema::new(Type::Struct)
            .field("magic", int())
            .optional()
            .into();
        let out = transform(Operand::Key, &[("field", "magic")])
            .apply(key_record(Some(optional), Value::Null))
            .unwrap()
            .unwrap();
        assert_eq!(out.key_schema.as_deref(), Some(&int()));
        assert_eq!(out.key, Value::Null);
    }

    /// Kafka's `ExtractFieldTest.nonExistentFieldWithSchemaShouldFail` and
    /// `nonExistentNestedFieldWithSchemaShouldFail`.
    #[test]
    fn a_field_the_schema_lacks_is_refused() {
        let int = || Schema::new(Type::Int32);
        let key_schema = schema(&[("magic", int())]);
        let key = structure(&key_schema, &[("magic", Value::Int32(42))]);
        assert_eq!(
            transform(Operand::Key, &[("field", "nonexistent")])
                .apply(key_record(Some(key_schema), Value::Struct(key)))
                .unwrap_err()
                .0,
            "Unknown field: nonexistent"
        );
        let foo_schema = schema(&[("foo", int())]);
        let nested_schema = schema(&[("magic", (*foo_schema).clone())]);
        let foo = structure(&foo_schema, &[("foo", Value::Int32(42))]);
        let nested = structure(&nested_schema, &[("magic", Value::Struct(foo))]);
        assert_eq!(
            transform(Operand::Key, &[("field", "magic.nonexistent"), V2])
                .apply(key_record(Some(nested_schema), Value::Struct(nested)))
                .unwrap_err()
                .0,
            "Unknown field: magic.nonexistent"
        );
        assert_eq!(
            transform(Operand::Value, &[("field", "a")])
                .apply(sink("t", Some(int().into()), Value::Int32(1)))
                .unwrap_err()
                .0,
            "Only Struct objects supported for [field extraction], found: java.lang.Integer"
        );
    }

    /// Kafka's `ExtractFieldTest.testUnsetOptionalKey` and `testUnsetOptionalField`.
    #[test]
    fn null_fields_read_as_their_default_unless_configured_otherwise() {
        for operand in [Operand::Key, Operand::Value] {
            for (replace, expected) in [("false", Value::Null), ("true", Value::Int32(42))] {
                let xform = transform(
                    operand,
                    &[
                        ("field", "optional_with_default"),
                        ("replace.null.with.default", replace),
                    ],
                );
                let schema = schema(&[(
                    "optional_with_default",
                    Schema::new(Type::Int32)
                        .optional()
                        .with_default(Value::Int32(42)),
                )]);
                let value = Value::Struct(Struct::new(schema.clone()));
                let record = match operand {
                    Operand::Key => key_record(Some(schema), value),
                    Operand::Value => sink("test", Some(schema), value),
                };
                let out = xform.apply(record).unwrap().unwrap();
                assert_eq!(operand.value(&out), &expected);
            }
        }
    }

    #[test]
    fn config_errors() {
        let errors = |config: &[(&str, &str)]| {
            option_errors(config, |o| ExtractField::configure(o, Operand::Value))
        };
        assert_eq!(
            errors(&[]),
            one_error(
                "field",
                "Missing required configuration \"transforms.t.field\" which has no default value."
            )
        );
        assert_eq!(
            errors(&[("field", "a"), ("field.syntax.version", "v3")]),
            one_error(
                "field.syntax.version",
                "Invalid value v3 for configuration field.syntax.version: String must be one of (case insensitive): V1, V2"
            )
        );
        assert_eq!(
            errors(&[("field", "`a.b"), ("field.syntax.version", "v2")]),
            one_error(
                "field",
                "Incomplete backtick pair in path: [`a.b], consider adding a backslash before backtick at position 0 to escape it"
            )
        );
    }
}
