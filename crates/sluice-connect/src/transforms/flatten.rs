//! `Flatten$Key` / `Flatten$Value`: lifts the fields of nested structs (or nested
//! schemaless maps) to the top level, naming each by the path joined with `delimiter`
//! (default `.`). Arrays are kept as they are. With a schema, a field under an optional
//! struct becomes optional and takes its default from the parent's default; a map field
//! is refused. A null key or value passes through.

use crate::ConfigError;
use crate::data::{DataError, Record, Schema, Struct, Type, Value};

use super::Transform;
use super::config::Options;
use super::support::{
    Operand, SchemaCache, add_field, copy_schema_basics, into_map, map_put, require_struct,
    struct_with_basics,
};

const PURPOSE: &str = "flattening";

pub(crate) struct Flatten {
    operand: Operand,
    delimiter: String,
    schemas: SchemaCache,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(Flatten::configure(options, Operand::Key)?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(Flatten::configure(options, Operand::Value)?))
}

impl Flatten {
    fn configure(options: &mut Options, operand: Operand) -> Result<Flatten, ConfigError> {
        let delimiter = options.string_or("delimiter", ".");
        options.check()?;
        Ok(Flatten {
            operand,
            delimiter,
            schemas: SchemaCache::new(),
        })
    }

    fn name(&self, prefix: &str, field: &str) -> String {
        if prefix.is_empty() {
            field.to_string()
        } else {
            format!("{prefix}{}{field}", self.delimiter)
        }
    }

    fn flatten_map(
        &self,
        entries: Vec<(Value, Value)>,
        prefix: &str,
        out: &mut Vec<(Value, Value)>,
    ) -> Result<(), DataError> {
        for (key, value) in entries {
            let key = match key {
                Value::String(key) => key,
                other => other.to_string(),
            };
            let name = self.name(prefix, &key);
            match value {
                Value::Map(nested) => self.flatten_map(nested, &name, out)?,
                Value::Struct(_) => {
                    return Err(DataError(format!(
                        "Flatten transformation does not support class org.apache.kafka.connect.data.Struct for record without schemas (for field {name})."
                    )));
                }
                other => map_put(out, &name, other),
            }
        }
        Ok(())
    }

    /// The flattened fields of `schema` (Kafka's `buildUpdatedSchema`).
    fn flatten_schema(
        &self,
        schema: &Schema,
        prefix: &str,
        out: &mut Schema,
        optional: bool,
        default_from_parent: Option<&Struct>,
    ) -> Result<(), DataError> {
        for field in &schema.fields {
            let name = self.name(prefix, &field.name);
            let field_optional = optional || field.schema.optional;
            let default = match (&field.schema.default, default_from_parent) {
                (Some(default), _) => Some(default.clone()),
                (None, Some(parent)) => parent.get(&field.name).filter(|v| !v.is_null()).cloned(),
                (None, None) => None,
            };
            match field.schema.ty {
                Type::Struct => {
                    let nested_default = match &default {
                        Some(Value::Struct(s)) => Some(s),
                        _ => None,
                    };
                    self.flatten_schema(&field.schema, &name, out, field_optional, nested_default)?;
                }
                Type::Map => {
                    return Err(DataError(format!(
                        "Flatten transformation does not support MAP for record with schemas (for field {name})."
                    )));
                }
                _ => {
                    let mut flat = copy_schema_basics(&field.schema);
                    flat.optional = field_optional;
                    flat.default = default;
                    add_field(out, &name, flat.into())?;
                }
            }
        }
        Ok(())
    }

    /// The flattened values of `value` (Kafka's `buildWithSchema`, reading with defaults).
    fn flatten_struct(
        &self,
        value: &Struct,
        prefix: &str,
        out: &mut Struct,
    ) -> Result<(), DataError> {
        for field in &value.schema.fields {
            let name = self.name(prefix, &field.name);
            let field_value = value.get(&field.name).unwrap_or(&Value::Null);
            match (field.schema.ty, field_value) {
                (Type::Struct, Value::Struct(nested)) => self.flatten_struct(nested, &name, out)?,
                (Type::Struct, _) => {}
                (Type::Map, _) => {
                    return Err(DataError(format!(
                        "Flatten transformation does not support MAP for record with schemas (for field {name})."
                    )));
                }
                _ => {
                    out.put(&name, field_value.clone())?;
                }
            }
        }
        Ok(())
    }
}

impl Transform for Flatten {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        if self.operand.value(&record).is_null() {
            return Ok(Some(record));
        }
        if self.operand.schema(&record).is_none() {
            let (_, value) = self.operand.take(&mut record);
            let mut flat = Vec::new();
            self.flatten_map(into_map(value, PURPOSE)?, "", &mut flat)?;
            self.operand.put(&mut record, None, Value::Map(flat));
            return Ok(Some(record));
        }
        let schema = self.operand.schema(&record).expect("checked above").clone();
        let value = require_struct(self.operand.value(&record), PURPOSE)?;
        let updated_schema = self.schemas.get_or_build(&schema, |schema| {
            let mut updated = struct_with_basics(schema);
            let default = match &schema.default {
                Some(Value::Struct(s)) => Some(s),
                _ => None,
            };
            self.flatten_schema(schema, "", &mut updated, schema.optional, default)?;
            Ok(updated)
        })?;
        let mut flat = Struct::new(updated_schema.clone());
        self.flatten_struct(value, "", &mut flat)?;
        self.operand
            .put(&mut record, Some(updated_schema), Value::Struct(flat));
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::SchemaRef;

    fn transform(operand: Operand, config: &[(&str, &str)]) -> Flatten {
        configure(config, |o| Flatten::configure(o, operand)).unwrap()
    }

    fn record(schema: Option<SchemaRef>, value: Value) -> Record {
        let mut record = Record::new("topic", schema, value);
        record.partition = Some(0);
        record
    }

    /// Kafka's `FlattenTest.topLevelStructRequired` and `topLevelMapRequired`.
    #[test]
    fn the_top_level_must_be_a_struct_or_map() {
        let xform = transform(Operand::Value, &[]);
        assert_eq!(
            xform
                .apply(record(
                    Some(Schema::new(Type::Int32).into()),
                    Value::Int32(42)
                ))
                .unwrap_err()
                .0,
            "Only Struct objects supported for [flattening], found: java.lang.Integer"
        );
        assert_eq!(
            xform.apply(record(None, Value::Int32(42))).unwrap_err().0,
            "Only Map objects supported in absence of schema for [flattening], found: java.lang.Integer"
        );
    }

    fn supported_types() -> Vec<(&'static str, Schema, Value)> {
        vec![
            ("int8", Schema::new(Type::Int8), Value::Int8(8)),
            ("int16", Schema::new(Type::Int16), Value::Int16(16)),
            ("int32", Schema::new(Type::Int32), Value::Int32(32)),
            ("int64", Schema::new(Type::Int64), Value::Int64(64)),
            ("float32", Schema::new(Type::Float32), Value::Float32(32.0)),
            ("float64", Schema::new(Type::Float64), Value::Float64(64.0)),
            ("boolean", Schema::new(Type::Boolean), Value::Boolean(true)),
            ("string", Schema::new(Type::String), s("stringy")),
            (
                "bytes",
                Schema::new(Type::Bytes),
                Value::Bytes(b"bytes".to_vec()),
            ),
        ]
    }

    /// Kafka's `FlattenTest.testNestedStruct`.
    #[test]
    fn nested_structs_are_flattened() {
        let types = supported_types();
        let inner = schema(
            &types
                .iter()
                .map(|(n, s, _)| (*n, s.clone()))
                .collect::<Vec<_>>(),
        );
        let one = schema(&[("B", (*inner).clone())]);
        let two = schema(&[("A", (*one).clone())]);
        let inner_value = structure(
            &inner,
            &types
                .iter()
                .map(|(n, _, v)| (*n, v.clone()))
                .collect::<Vec<_>>(),
        );
        let one_value = structure(&one, &[("B", Value::Struct(inner_value))]);
        let two_value = structure(&two, &[("A", Value::Struct(one_value))]);
        let out = transform(Operand::Value, &[])
            .apply(record(Some(two), Value::Struct(two_value)))
            .unwrap()
            .unwrap();
        let Value::Struct(flat) = out.value else {
            panic!("a struct")
        };
        assert_eq!(flat.schema.fields.len(), 9);
        for (name, _, value) in types {
            assert_eq!(flat.get(&format!("A.B.{name}")), Some(&value), "{name}");
        }
    }

    /// Kafka's `FlattenTest.testNestedMapWithDelimiter`, `testKey`, `testSchemalessArray`,
    /// `testMapWithNullFields`.
    #[test]
    fn nested_maps_are_flattened() {
        let types = supported_types();
        let inner = Value::Map(types.iter().map(|(n, _, v)| (s(n), v.clone())).collect());
        let value = map(&[("A", map(&[("B", inner)]))]);
        let out = transform(Operand::Value, &[("delimiter", "#")])
            .apply(record(None, value))
            .unwrap()
            .unwrap();
        let expected = Value::Map(
            types
                .iter()
                .map(|(n, _, v)| (s(&format!("A#B#{n}")), v.clone()))
                .collect(),
        );
        assert_eq!(out.value, expected);

        let key = map(&[("A", map(&[("B", Value::Int32(12))]))]);
        let out = transform(Operand::Key, &[])
            .apply(record(None, Value::Null).with_key(None, key))
            .unwrap()
            .unwrap();
        assert_eq!(out.key, map(&[("A.B", Value::Int32(12))]));

        let arrays = map(&[(
            "foo",
            Value::Array(vec![s("bar"), map(&[("baz", map(&[("lfg", s("lfg"))]))])]),
        )]);
        let out = transform(Operand::Value, &[])
            .apply(record(None, arrays.clone()))
            .unwrap()
            .unwrap();
        assert_eq!(out.value, arrays);

        let nulls = map(&[
            ("firstNull", Value::Null),
            ("firstNonNull", s("nonNull")),
            ("secondNull", Value::Null),
        ]);
        let out = transform(Operand::Value, &[])
            .apply(record(None, nulls.clone()))
            .unwrap()
            .unwrap();
        assert_eq!(out.value, nulls);
    }

    /// Kafka's `FlattenTest.testOptionalFieldStruct`, `testOptionalNestedStruct`,
    /// `testOptionalAndDefaultValuesNested`.
    #[test]
    fn optionality_and_defaults_come_from_parents() {
        let optional_int = || Schema::new(Type::Int32).optional();
        let inner: SchemaRef = Schema::new(Type::Struct)
            .field("opt_int32", optional_int())
            .optional()
            .into();
        let outer = schema(&[("B", (*inner).clone())]);
        let out = transform(Operand::Value, &[])
            .apply(record(
                Some(outer.clone()),
                Value::Struct(Struct::new(outer)),
            ))
            .unwrap()
            .unwrap();
        let Value::Struct(flat) = out.value else {
            panic!("a struct")
        };
        assert_eq!(flat.get("B.opt_int32"), Some(&Value::Null));

        let child = Schema::new(Type::Struct)
            .optional()
            .field("req_field", Schema::new(Type::String))
            .field(
                "opt_field",
                Schema::new(Type::String)
                    .optional()
                    .with_default(s("child_default")),
            );
        let child_default = structure(&child.clone().into(), &[("req_field", s("req_default"))]);
        let child: SchemaRef = child.with_default(Value::Struct(child_default)).into();
        let out = transform(Operand::Value, &[])
            .apply(record(
                Some(child.clone()),
                Value::Struct(Struct::new(child)),
            ))
            .unwrap()
            .unwrap();
        let flat_schema = out.value_schema.unwrap();
        assert_eq!(flat_schema.fields.len(), 2);
        assert_eq!(
            *flat_schema.get_field("req_field").unwrap().schema,
            Schema::new(Type::String)
                .optional()
                .with_default(s("req_default"))
        );
        assert_eq!(
            *flat_schema.get_field("opt_field").unwrap().schema,
            Schema::new(Type::String)
                .optional()
                .with_default(s("child_default"))
        );
    }

    /// Kafka's `FlattenTest.testArrayWithSchema`, `testStructWithNullFields` and the
    /// tombstone tests.
    #[test]
    fn flat_structs_and_tombstones_are_unchanged() {
        let nested = schema(&[("lfg", Schema::new(Type::String))]);
        let inner = schema(&[("baz", (*nested).clone())]);
        let outer = schema(&[("foo", Schema::array(inner.clone()).with_doc("durk"))]);
        let inner_value = structure(
            &inner,
            &[(
                "baz",
                Value::Struct(structure(&nested, &[("lfg", s("lfg"))])),
            )],
        );
        let value = structure(
            &outer,
            &[("foo", Value::Array(vec![Value::Struct(inner_value)]))],
        );
        let out = transform(Operand::Value, &[])
            .apply(record(Some(outer.clone()), Value::Struct(value.clone())))
            .unwrap()
            .unwrap();
        assert_eq!(out.value_schema, Some(outer));
        assert_eq!(out.value, Value::Struct(value));

        let named: SchemaRef = Schema::new(Type::Struct)
            .named("name")
            .with_version(1)
            .field("magic", Schema::new(Type::Int64).optional())
            .into();
        let tombstone = record(Some(named), Value::Null);
        assert_eq!(
            transform(Operand::Value, &[])
                .apply(tombstone.clone())
                .unwrap(),
            Some(tombstone)
        );
    }

    #[test]
    fn maps_under_a_schema_are_refused() {
        let with_map = schema(&[(
            "m",
            Schema::map(Schema::new(Type::String), Schema::new(Type::String)),
        )]);
        let value = Value::Struct(Struct::new(with_map.clone()));
        assert_eq!(
            transform(Operand::Value, &[])
                .apply(record(Some(with_map), value))
                .unwrap_err()
                .0,
            "Flatten transformation does not support MAP for record with schemas (for field m)."
        );
    }
}
