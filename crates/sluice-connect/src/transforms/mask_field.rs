//! `MaskField$Key` / `MaskField$Value`: replaces the named fields' values with the empty
//! value of their type (0, false, "", the epoch for Date/Time/Timestamp, zero for a
//! Decimal, an empty array or map), or with `replacement` converted to a numeric or
//! string field's type. A schemaless map gains a null entry for a named field it lacks;
//! unlike most transforms, a null key or value is refused (as Kafka refuses it).

use crate::ConfigError;
use crate::data::{DATE, DataError, Record, Schema, Struct, TIME, TIMESTAMP, Value};

use super::Transform;
use super::config::Options;
use super::decimal::{JavaDecimal, unscaled_bytes};
use super::support::{Operand, into_map, map_get, map_put, require_struct, struct_get};

const PURPOSE: &str = "mask fields";

pub(crate) struct MaskField {
    operand: Operand,
    /// The configured names, each once, in configured order.
    fields: Vec<String>,
    replacement: Option<String>,
    replace_null_with_default: bool,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(MaskField::configure(options, Operand::Key)?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(MaskField::configure(options, Operand::Value)?))
}

impl MaskField {
    pub(crate) fn configure(
        options: &mut Options,
        operand: Operand,
    ) -> Result<MaskField, ConfigError> {
        let listed = options.non_empty_list("fields");
        let replacement = options.string("replacement");
        if replacement.as_deref() == Some("") {
            options.invalid("replacement", "", "String must be non-empty");
        }
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        options.check()?;
        let mut fields: Vec<String> = Vec::with_capacity(listed.len());
        for field in listed {
            if !fields.contains(&field) {
                fields.push(field);
            }
        }
        Ok(MaskField {
            operand,
            fields,
            replacement,
            replace_null_with_default,
        })
    }

    /// The masked form of a value; `schema` is the field's schema where there is one
    /// (it tells a Date, Time, Timestamp or Decimal, which Java holds as other classes).
    fn masked(&self, value: &Value, schema: Option<&Schema>) -> Result<Value, DataError> {
        if value.is_null() {
            return Ok(Value::Null);
        }
        let logical = schema.and_then(|s| s.name.as_deref());
        let is_date = matches!(logical, Some(DATE | TIME | TIMESTAMP));
        let decimal_scale = schema.and_then(Schema::decimal_scale);
        match &self.replacement {
            None => mask_with_empty(value, decimal_scale.is_some()),
            Some(replacement) => {
                if is_date {
                    return Err(DataError(
                        "Cannot mask value of type class java.util.Date with custom replacement."
                            .into(),
                    ));
                }
                mask_with_replacement(value, replacement, decimal_scale)
            }
        }
    }
}

fn mask_with_empty(value: &Value, is_decimal: bool) -> Result<Value, DataError> {
    Ok(match value {
        Value::Boolean(_) => Value::Boolean(false),
        Value::Int8(_) => Value::Int8(0),
        Value::Int16(_) => Value::Int16(0),
        Value::Int32(_) => Value::Int32(0),
        Value::Int64(_) => Value::Int64(0),
        Value::Float32(_) => Value::Float32(0.0),
        Value::Float64(_) => Value::Float64(0.0),
        Value::String(_) => Value::String(String::new()),
        Value::Bytes(_) if is_decimal => Value::Bytes(unscaled_bytes(0)),
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Map(_) => Value::Map(Vec::new()),
        other => {
            return Err(DataError(format!(
                "Cannot mask value of type: class {}",
                other.java_class()
            )));
        }
    })
}

/// `Values.convertToLong` etc. of the replacement string.
fn mask_with_replacement(
    value: &Value,
    replacement: &str,
    decimal_scale: Option<i32>,
) -> Result<Value, DataError> {
    let not_a_number = || {
        DataError(format!(
            "Unable to convert {replacement} (class java.lang.String) to a number"
        ))
    };
    let number = || JavaDecimal::parse(replacement).ok_or_else(not_a_number);
    Ok(match value {
        Value::Int8(_) => Value::Int8(number()?.long_value() as i8),
        Value::Int16(_) => Value::Int16(number()?.long_value() as i16),
        Value::Int32(_) => Value::Int32(number()?.long_value() as i32),
        Value::Int64(_) => Value::Int64(number()?.long_value()),
        Value::Float32(_) => Value::Float32(number()?.double_value() as f32),
        Value::Float64(_) => Value::Float64(number()?.double_value()),
        Value::String(_) => Value::String(replacement.to_string()),
        Value::Bytes(_) if decimal_scale.is_some() => {
            let scale = decimal_scale.unwrap_or(0);
            let decimal = JavaDecimal::parse(replacement).ok_or_else(|| {
                DataError(format!(
                    "Unable to convert {replacement} (class java.lang.String) to number"
                ))
            })?;
            // Connect's Decimal carries its scale in the schema; a replacement that needs
            // another scale is refused as `Decimal.fromLogical` refuses it.
            let unscaled = decimal.unscaled_at(scale).ok_or_else(|| {
                DataError(format!(
                    "Decimal value has mismatching scale for given Decimal schema. Schema has scale {scale}, value has scale {}.",
                    decimal.scale()
                ))
            })?;
            Value::Bytes(unscaled_bytes(unscaled))
        }
        other => {
            return Err(DataError(format!(
                "Cannot mask value of type class {} with custom replacement.",
                other.java_class()
            )));
        }
    })
}

impl Transform for MaskField {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        if self.operand.schema(&record).is_none() {
            let (_, value) = self.operand.take(&mut record);
            let mut entries = into_map(value, PURPOSE)?;
            for field in &self.fields {
                let masked = match map_get(&entries, field) {
                    Some(value) => self.masked(value, None)?,
                    None => Value::Null,
                };
                map_put(&mut entries, field, masked);
            }
            self.operand.put(&mut record, None, Value::Map(entries));
            return Ok(Some(record));
        }

        let value = require_struct(self.operand.value(&record), PURPOSE)?;
        let mut updated = Struct::new(value.schema.clone());
        for field in &value.schema.fields {
            let original = struct_get(value, &field.name, self.replace_null_with_default)?;
            let field_value = if self.fields.contains(&field.name) {
                self.masked(&original, Some(&field.schema))?
            } else {
                original
            };
            updated.put(&field.name, field_value)?;
        }
        let schema = self.operand.schema(&record).cloned();
        self.operand
            .put(&mut record, schema, Value::Struct(updated));
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::{SchemaRef, Type};

    /// Kafka's `MaskFieldTest.SCHEMA`: one field of each kind.
    fn all_types() -> SchemaRef {
        schema(&[
            ("magic", Schema::new(Type::Int32)),
            ("bool", Schema::new(Type::Boolean)),
            ("byte", Schema::new(Type::Int8)),
            ("short", Schema::new(Type::Int16)),
            ("int", Schema::new(Type::Int32)),
            ("long", Schema::new(Type::Int64)),
            ("float", Schema::new(Type::Float32)),
            ("double", Schema::new(Type::Float64)),
            ("string", Schema::new(Type::String)),
            ("date", Schema::date()),
            ("time", Schema::time()),
            ("timestamp", Schema::timestamp()),
            ("decimal", Schema::decimal(0)),
            ("array", Schema::array(Schema::new(Type::Int32))),
            (
                "map",
                Schema::map(Schema::new(Type::String), Schema::new(Type::String)),
            ),
            (
                "withDefault",
                Schema::new(Type::String)
                    .optional()
                    .with_default(s("default")),
            ),
        ])
    }

    fn all_values(schema: &SchemaRef) -> Struct {
        structure(
            schema,
            &[
                ("magic", Value::Int32(42)),
                ("bool", Value::Boolean(true)),
                ("byte", Value::Int8(42)),
                ("short", Value::Int16(42)),
                ("int", Value::Int32(42)),
                ("long", Value::Int64(42)),
                ("float", Value::Float32(42.0)),
                ("double", Value::Float64(42.0)),
                ("string", s("hmm")),
                ("date", Value::Int32(19000)),
                ("time", Value::Int32(3_600_000)),
                ("timestamp", Value::Int64(1_700_000_000_000)),
                ("decimal", Value::Bytes(vec![42])),
                (
                    "array",
                    Value::Array(vec![Value::Int32(1), Value::Int32(2), Value::Int32(3)]),
                ),
                ("map", map(&[("what", s("what"))])),
            ],
        )
    }

    /// Kafka's `MaskFieldTest.VALUES` (schemaless; no Java-only classes here).
    fn schemaless_values() -> Value {
        map(&[
            ("magic", Value::Int32(42)),
            ("bool", Value::Boolean(true)),
            ("byte", Value::Int8(42)),
            ("short", Value::Int16(42)),
            ("int", Value::Int32(42)),
            ("long", Value::Int64(42)),
            ("float", Value::Float32(42.0)),
            ("double", Value::Float64(42.0)),
            ("string", s("55.121.20.20")),
            ("list", Value::Array(vec![Value::Int32(42)])),
            ("map", map(&[("key", s("value"))])),
        ])
    }

    fn transform(fields: &str, replacement: Option<&str>) -> MaskField {
        let mut config = vec![("fields", fields), ("replace.null.with.default", "false")];
        if let Some(replacement) = replacement {
            config.push(("replacement", replacement));
        }
        configure(&config, |o| MaskField::configure(o, Operand::Value)).unwrap()
    }

    fn masked_struct(fields: &str, replacement: Option<&str>) -> Result<Struct, DataError> {
        let schema = all_types();
        let record = sink("", Some(schema.clone()), Value::Struct(all_values(&schema)));
        let out = transform(fields, replacement).apply(record)?.unwrap();
        match out.value {
            Value::Struct(s) => Ok(s),
            other => panic!("a struct, not {other:?}"),
        }
    }

    fn masked_map(fields: &str, replacement: Option<&str>) -> Result<Value, DataError> {
        let record = sink("", None, schemaless_values());
        Ok(transform(fields, replacement).apply(record)?.unwrap().value)
    }

    /// Kafka's `MaskFieldTest.testSchemaless`.
    #[test]
    fn schemaless_fields_are_masked_with_empty_values() {
        let out = masked_map(
            "bool,byte,short,int,long,float,double,string,list,map,absent",
            None,
        )
        .unwrap();
        assert_eq!(
            out,
            map(&[
                ("magic", Value::Int32(42)),
                ("bool", Value::Boolean(false)),
                ("byte", Value::Int8(0)),
                ("short", Value::Int16(0)),
                ("int", Value::Int32(0)),
                ("long", Value::Int64(0)),
                ("float", Value::Float32(0.0)),
                ("double", Value::Float64(0.0)),
                ("string", s("")),
                ("list", Value::Array(vec![])),
                ("map", Value::Map(vec![])),
                ("absent", Value::Null),
            ])
        );
    }

    /// Kafka's `MaskFieldTest.testWithSchema`.
    #[test]
    fn struct_fields_are_masked_with_empty_values() {
        let fields = all_types()
            .fields
            .iter()
            .map(|f| f.name.clone())
            .filter(|n| n != "magic")
            .collect::<Vec<_>>()
            .join(",");
        let out = masked_struct(&fields, None).unwrap();
        let expected = [
            ("magic", Value::Int32(42)),
            ("bool", Value::Boolean(false)),
            ("byte", Value::Int8(0)),
            ("short", Value::Int16(0)),
            ("int", Value::Int32(0)),
            ("long", Value::Int64(0)),
            ("float", Value::Float32(0.0)),
            ("double", Value::Float64(0.0)),
            ("string", s("")),
            ("date", Value::Int32(0)),
            ("time", Value::Int32(0)),
            ("timestamp", Value::Int64(0)),
            ("decimal", Value::Bytes(vec![0])),
            ("array", Value::Array(vec![])),
            ("map", Value::Map(vec![])),
            ("withDefault", Value::Null),
        ];
        for (name, value) in expected {
            let field = out.schema.get_field(name).unwrap();
            assert_eq!(out.values[field.index], value, "{name}");
        }
    }

    /// Kafka's `MaskFieldTest.testSchemalessWithReplacement` and
    /// `testWithSchemaAndReplacement`.
    #[test]
    fn replacements_take_the_field_type() {
        let cases = [
            ("short", "123", Value::Int16(123)),
            ("byte", "123", Value::Int8(123)),
            ("int", "123", Value::Int32(123)),
            ("long", "123", Value::Int64(123)),
            ("float", "123.0", Value::Float32(123.0)),
            ("double", "123.0", Value::Float64(123.0)),
            ("string", "123", s("123")),
        ];
        for (field, replacement, expected) in cases {
            let out = masked_map(field, Some(replacement)).unwrap();
            assert_eq!(out.map_get(field), Some(&expected), "{field}");
            let out = masked_struct(field, Some(replacement)).unwrap();
            assert_eq!(out.get(field), Some(&expected), "{field}");
        }
        let out = masked_struct("decimal", Some("123.0")).unwrap();
        assert_eq!(out.get("decimal"), Some(&Value::Bytes(vec![123])));
        // Java's narrowing: BigDecimal.longValue then a cast.
        let out = masked_map("byte", Some("300.7")).unwrap();
        assert_eq!(out.map_get("byte"), Some(&Value::Int8(44)));
    }

    /// Kafka's `MaskFieldTest.test*UnsupportedReplacementType` and
    /// `testReplacementTypeMismatch`.
    #[test]
    fn unsupported_replacements_are_refused() {
        let map_cases = [
            (
                "bool",
                "false",
                "Cannot mask value of type class java.lang.Boolean with custom replacement.",
            ),
            (
                "list",
                "123",
                "Cannot mask value of type class java.util.ArrayList with custom replacement.",
            ),
            (
                "map",
                "123",
                "Cannot mask value of type class java.util.HashMap with custom replacement.",
            ),
            (
                "byte",
                "foo",
                "Unable to convert foo (class java.lang.String) to a number",
            ),
            (
                "short",
                "foo",
                "Unable to convert foo (class java.lang.String) to a number",
            ),
            (
                "int",
                "foo",
                "Unable to convert foo (class java.lang.String) to a number",
            ),
            (
                "long",
                "foo",
                "Unable to convert foo (class java.lang.String) to a number",
            ),
            (
                "float",
                "foo",
                "Unable to convert foo (class java.lang.String) to a number",
            ),
            (
                "double",
                "foo",
                "Unable to convert foo (class java.lang.String) to a number",
            ),
            (
                "string,int",
                "foo",
                "Unable to convert foo (class java.lang.String) to a number",
            ),
        ];
        for (fields, replacement, message) in map_cases {
            assert_eq!(
                masked_map(fields, Some(replacement)).unwrap_err().0,
                message,
                "{fields}"
            );
        }
        let struct_cases = [
            (
                "time",
                "1",
                "Cannot mask value of type class java.util.Date with custom replacement.",
            ),
            (
                "timestamp",
                "1",
                "Cannot mask value of type class java.util.Date with custom replacement.",
            ),
            (
                "array",
                "1",
                "Cannot mask value of type class java.util.ArrayList with custom replacement.",
            ),
            (
                "decimal",
                "foo",
                "Unable to convert foo (class java.lang.String) to number",
            ),
            (
                "decimal",
                "1.5",
                "Decimal value has mismatching scale for given Decimal schema. Schema has scale 0, value has scale 1.",
            ),
        ];
        for (fields, replacement, message) in struct_cases {
            assert_eq!(
                masked_struct(fields, Some(replacement)).unwrap_err().0,
                message,
                "{fields}"
            );
        }
    }

    #[test]
    fn a_null_value_is_refused_and_bytes_cannot_be_masked() {
        let xform = transform("a", None);
        assert_eq!(
            xform.apply(sink("t", None, Value::Null)).unwrap_err().0,
            "Only Map objects supported in absence of schema for [mask fields], found: null"
        );
        assert_eq!(
            xform
                .apply(sink("t", None, map(&[("a", Value::Bytes(vec![1]))])))
                .unwrap_err()
                .0,
            "Cannot mask value of type: class [B"
        );
    }

    /// Kafka's `MaskFieldTest.testEmptyStringReplacementValue`.
    #[test]
    fn config_errors() {
        let errors = |config: &[(&str, &str)]| {
            option_errors(config, |o| MaskField::configure(o, Operand::Value))
        };
        assert_eq!(
            errors(&[("fields", "short"), ("replacement", "")]),
            one_error(
                "replacement",
                "Invalid value  for configuration replacement: String must be non-empty"
            )
        );
        assert_eq!(
            errors(&[("fields", "")]),
            one_error(
                "fields",
                "Invalid value [] for configuration fields: Empty list"
            )
        );
        assert_eq!(
            errors(&[]),
            one_error(
                "fields",
                "Missing required configuration \"transforms.t.fields\" which has no default value."
            )
        );
    }
}
