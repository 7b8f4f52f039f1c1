//! `SetSchemaMetadata$Key` / `SetSchemaMetadata$Value`: sets the name (`schema.name`),
//! the version (`schema.version`) or both of the key or value schema, everything else
//! of the schema kept; a struct value is rebuilt under the new schema. A record with
//! neither schema nor value passes through; a value without a schema is an error.

use crate::ConfigError;
use crate::data::{DataError, Record, SchemaRef, Struct, Value};

use super::Transform;
use super::config::Options;
use super::support::{Operand, require_schema, struct_get};

pub(crate) struct SetSchemaMetadata {
    operand: Operand,
    name: Option<String>,
    version: Option<i32>,
    replace_null_with_default: bool,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(SetSchemaMetadata::configure(
        options,
        Operand::Key,
    )?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(SetSchemaMetadata::configure(
        options,
        Operand::Value,
    )?))
}

impl SetSchemaMetadata {
    fn configure(
        options: &mut Options,
        operand: Operand,
    ) -> Result<SetSchemaMetadata, ConfigError> {
        let name = options.string("schema.name");
        let version = options.int("schema.version");
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        options.check()?;
        if name.is_none() && version.is_none() {
            return options.fail("type", "Neither schema name nor version configured");
        }
        Ok(SetSchemaMetadata {
            operand,
            name,
            version,
            replace_null_with_default,
        })
    }
}

impl Transform for SetSchemaMetadata {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        let schema = self.operand.schema(&record);
        if schema.is_none() && self.operand.value(&record).is_null() {
            return Ok(Some(record));
        }
        let schema = require_schema(schema, "updating schema metadata")?;
        let mut updated = (**schema).clone();
        if let Some(name) = &self.name {
            updated.name = Some(name.clone());
        }
        if let Some(version) = self.version {
            updated.version = Some(version);
        }
        let updated: SchemaRef = updated.into();
        let (_, value) = self.operand.take(&mut record);
        let value = match value {
            Value::Struct(original) => {
                let mut rebuilt = Struct::new(updated.clone());
                for field in &updated.fields {
                    let field_value =
                        struct_get(&original, &field.name, self.replace_null_with_default)?;
                    rebuilt.put(&field.name, field_value)?;
                }
                Value::Struct(rebuilt)
            }
            other => other,
        };
        self.operand.put(&mut record, Some(updated), value);
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::{Schema, Type};

    fn transform(config: &[(&str, &str)]) -> SetSchemaMetadata {
        configure(config, |o| SetSchemaMetadata::configure(o, Operand::Value)).unwrap()
    }

    /// Kafka's `SetSchemaMetadataTest.schemaNameUpdate`, `schemaVersionUpdate`,
    /// `schemaNameAndVersionUpdate`.
    #[test]
    fn name_and_version_are_set() {
        let empty: SchemaRef = Schema::new(Type::Struct).into();
        let cases: &[(Pairs, Option<&str>, Option<i32>)] = &[
            (&[("schema.name", "foo")], Some("foo"), None),
            (&[("schema.version", "42")], None, Some(42)),
            (
                &[("schema.name", "foo"), ("schema.version", "42")],
                Some("foo"),
                Some(42),
            ),
        ];
        for (config, name, version) in cases {
            let out = transform(config)
                .apply(sink("", Some(empty.clone()), Value::Null))
                .unwrap()
                .unwrap();
            let schema = out.value_schema.unwrap();
            assert_eq!(schema.name.as_deref(), *name);
            assert_eq!(schema.version, *version);
        }
    }

    /// Kafka's `SetSchemaMetadataTest.schemaNameAndVersionUpdateWithStruct` and
    /// `schemaNameAndVersionUpdateWithStructAndNullField`.
    #[test]
    fn struct_values_are_rebuilt_under_the_new_schema() {
        for (replace, expected) in [("false", Value::Null), ("true", s("default"))] {
            let schema: SchemaRef = Schema::new(Type::Struct)
                .named("my.orig.SchemaDefn")
                .field(
                    "f1",
                    Schema::new(Type::String)
                        .with_default(s("default"))
                        .optional(),
                )
                .field("f2", Schema::new(Type::Int32))
                .into();
            let value = structure(&schema, &[("f2", Value::Int32(1))]);
            let out = transform(&[
                ("schema.name", "foo"),
                ("schema.version", "42"),
                ("replace.null.with.default", replace),
            ])
            .apply(sink("", Some(schema), Value::Struct(value)))
            .unwrap()
            .unwrap();
            let updated = out.value_schema.unwrap();
            assert_eq!(updated.name.as_deref(), Some("foo"));
            assert_eq!(updated.version, Some(42));
            let Value::Struct(value) = out.value else {
                panic!("a struct")
            };
            assert!(std::sync::Arc::ptr_eq(&value.schema, &updated));
            assert_eq!(value.values, vec![expected, Value::Int32(1)]);
        }
    }

    /// Kafka's `SetSchemaMetadataTest.valueSchemaRequired` and `ignoreRecordWithNullValue`.
    #[test]
    fn a_schema_is_required_unless_the_value_is_null() {
        let xform = transform(&[("schema.name", "foo")]);
        assert_eq!(
            xform.apply(sink("", None, Value::Int32(42))).unwrap_err().0,
            "Schema required for [updating schema metadata]"
        );
        let null = sink("", None, Value::Null);
        assert_eq!(xform.apply(null.clone()).unwrap(), Some(null));
    }

    #[test]
    fn config_errors() {
        let errors = |config: &[(&str, &str)]| {
            option_errors(config, |o| SetSchemaMetadata::configure(o, Operand::Value))
        };
        assert_eq!(
            errors(&[]),
            one_error("type", "Neither schema name nor version configured")
        );
        assert_eq!(
            errors(&[("schema.version", "x")]),
            one_error(
                "schema.version",
                "Invalid value x for configuration transforms.t.schema.version: Not a number of type INT"
            )
        );
    }
}
