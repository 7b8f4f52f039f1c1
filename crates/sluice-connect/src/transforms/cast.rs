//! `Cast$Key` / `Cast$Value`: casts top-level fields (`spec=field:type,...`) or the whole
//! key or value (`spec=type`) to `int8`, `int16`, `int32`, `int64`, `float32`,
//! `float64`, `boolean` or `string`, from those types or bytes (to string only, in
//! base64). Casts narrow as Java's do (integers wrap, floats saturate), strings parse
//! as `Integer.parseInt` and `Double.parseDouble` parse, Date/Time/Timestamp cast to
//! their underlying number or to Connect's ISO-8601 text, a Decimal to its value.
//! A null key or value passes through; a schemaless map gains a null entry for a cast
//! field it lacks.

use std::collections::BTreeMap;

use base64::Engine as _;

use crate::ConfigError;
use crate::data::{DATE, DECIMAL, DataError, Record, Schema, Struct, TIME, TIMESTAMP, Type, Value};

use super::Transform;
use super::config::Options;
use super::decimal::{JavaDecimal, unscaled_value};
use super::simple_date_format::SimpleDateFormat;
use super::support::{
    Operand, SchemaCache, add_field, copy_schema_basics, into_map, java_double, java_float,
    java_list, java_split, map_get, map_put, require_struct, struct_get, struct_with_basics,
};

const PURPOSE: &str = "cast types";
const MILLIS_PER_DAY: i64 = 86_400_000;

const INPUT_TYPES: &str = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]";
const OUTPUT_TYPES: &str = "[INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]";

/// Java's `Schema.Type` name.
fn java_type_name(ty: Type) -> &'static str {
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

fn type_by_java_name(name: &str) -> Option<Type> {
    [
        Type::Int8,
        Type::Int16,
        Type::Int32,
        Type::Int64,
        Type::Float32,
        Type::Float64,
        Type::Boolean,
        Type::String,
        Type::Bytes,
        Type::Array,
        Type::Map,
        Type::Struct,
    ]
    .into_iter()
    .find(|ty| java_type_name(*ty) == name.to_uppercase())
}

fn is_output_type(ty: Type) -> bool {
    !matches!(ty, Type::Bytes | Type::Array | Type::Map | Type::Struct)
}

/// What to cast.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Casts {
    Whole(Type),
    Fields(BTreeMap<String, Type>),
}

/// `spec`, with Kafka's texts (including its mention of `renames` for a mapping with
/// too many colons).
fn parse_spec(mappings: &[String]) -> Result<Casts, String> {
    if mappings.is_empty() {
        return Err("Must specify at least one field to cast.".into());
    }
    let target = |name: &str| {
        let name = name.trim();
        let ty = type_by_java_name(name)
            .ok_or_else(|| format!("Invalid type found in casting spec: {name}"))?;
        if !is_output_type(ty) {
            return Err(format!(
                "Cast transformation does not support casting to {}; supported types are {OUTPUT_TYPES}",
                java_type_name(ty)
            ));
        }
        Ok(ty)
    };
    let mut fields = BTreeMap::new();
    let mut whole = None;
    for mapping in mappings {
        let parts = java_split(mapping, ':');
        match parts.as_slice() {
            [ty] => whole = Some(target(ty)?),
            [field, ty] => {
                fields.insert(field.trim().to_string(), target(ty)?);
            }
            [] => return Err("Invalid type found in casting spec: ".into()),
            _ => {
                return Err(format!(
                    "Invalid value {} for configuration renames: Invalid rename mapping: {mapping}",
                    java_list(mappings)
                ));
            }
        }
    }
    match whole {
        Some(_) if mappings.len() > 1 => Err(
            "Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec"
                .into(),
        ),
        Some(ty) => Ok(Casts::Whole(ty)),
        None => Ok(Casts::Fields(fields)),
    }
}

pub(crate) struct Cast {
    operand: Operand,
    casts: Casts,
    replace_null_with_default: bool,
    schemas: SchemaCache,
}

pub(crate) fn key(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(Cast::configure(options, Operand::Key)?))
}

pub(crate) fn value(options: &mut Options) -> Result<Box<dyn Transform>, ConfigError> {
    Ok(Box::new(Cast::configure(options, Operand::Value)?))
}

/// The value's type as Connect infers it without a schema (`ConnectSchema.schemaType`).
fn inferred_type(value: &Value) -> Type {
    match value {
        Value::Int8(_) => Type::Int8,
        Value::Int16(_) => Type::Int16,
        Value::Int32(_) => Type::Int32,
        Value::Int64(_) => Type::Int64,
        Value::Float32(_) => Type::Float32,
        Value::Float64(_) => Type::Float64,
        Value::Boolean(_) => Type::Boolean,
        Value::String(_) | Value::Null => Type::String,
        Value::Bytes(_) => Type::Bytes,
        Value::Array(_) => Type::Array,
        Value::Map(_) => Type::Map,
        Value::Struct(_) => Type::Struct,
    }
}

/// A number as Java's `Number` narrows it.
#[derive(Debug, Clone, Copy)]
enum Number {
    Integer(i64),
    Floating(f64),
    /// A Decimal's value, narrowed through `longValue`/`doubleValue`.
    Decimal {
        long: i64,
        double: f64,
    },
}

impl Number {
    fn long(self) -> i64 {
        match self {
            Number::Integer(v) => v,
            // Java's (long) of a double saturates and maps NaN to 0, as `as` does.
            Number::Floating(v) => v as i64,
            Number::Decimal { long, .. } => long,
        }
    }

    /// `intValue()`: a double saturates at the int range, a long wraps.
    fn int(self) -> i32 {
        match self {
            Number::Floating(v) => v as i32,
            other => other.long() as i32,
        }
    }

    fn double(self) -> f64 {
        match self {
            Number::Integer(v) => v as f64,
            Number::Floating(v) => v,
            Number::Decimal { double, .. } => double,
        }
    }
}

/// `Double.parseDouble`: surrounding whitespace and a `d`/`f` suffix are allowed,
/// `NaN` and `Infinity` are spelled as Java spells them.
fn java_parse_double(text: &str) -> Option<f64> {
    let trimmed = text.trim_matches(|c: char| c <= ' ');
    let body = trimmed
        .strip_suffix(['d', 'D', 'f', 'F'])
        .unwrap_or(trimmed);
    let unsigned = body.trim_start_matches(['+', '-']);
    match unsigned {
        "NaN" if body == unsigned => return Some(f64::NAN),
        "Infinity" => {
            return Some(if body.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        _ => {}
    }
    if body.len() - unsigned.len() > 1
        || unsigned
            .chars()
            .any(|c| c.is_alphabetic() && c != 'e' && c != 'E')
    {
        return None;
    }
    body.parse().ok()
}

fn java_parse_float(text: &str) -> Option<f32> {
    let trimmed = text.trim_matches(|c: char| c <= ' ');
    let body = trimmed
        .strip_suffix(['d', 'D', 'f', 'F'])
        .unwrap_or(trimmed);
    match java_parse_double(text) {
        Some(v) if v.is_nan() || v.is_infinite() => Some(v as f32),
        Some(_) => body.parse().ok(),
        None => None,
    }
}

/// Connect's text of a Date/Time/Timestamp (`Values.dateFormatFor`, in UTC).
fn date_text(millis: i64) -> String {
    let pattern = if millis < MILLIS_PER_DAY {
        "HH:mm:ss.SSS'Z'"
    } else if millis % MILLIS_PER_DAY == 0 {
        "yyyy-MM-dd"
    } else {
        "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
    };
    SimpleDateFormat::new(pattern)
        .expect("Connect's ISO-8601 patterns are valid")
        .format(millis)
}

/// `castValueToType`: the value, known by its schema or inferred, as `target`.
fn cast_value(schema: Option<&Schema>, value: &Value, target: Type) -> Result<Value, DataError> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    let source = schema.map_or_else(|| inferred_type(value), |s| s.ty);
    if matches!(source, Type::Array | Type::Map | Type::Struct) {
        return Err(DataError(format!(
            "Cast transformation does not support casting from {}; supported types are {INPUT_TYPES}",
            java_type_name(source)
        )));
    }
    let logical = schema.and_then(|s| s.name.as_deref());
    let unexpected = |v: &Value| {
        DataError(format!(
            "Unexpected type in Cast transformation: class {}",
            v.java_class()
        ))
    };
    let out_of_range = |text: &str| {
        DataError(format!(
            "Value ({text}) was out of range for requested data type"
        ))
    };

    // Java holds these as objects of other classes: a Date, or a BigDecimal.
    let date_millis = match (logical, value) {
        (Some(DATE), Value::Int32(days)) => Some(i64::from(*days) * MILLIS_PER_DAY),
        (Some(TIME), Value::Int32(millis)) => Some(i64::from(*millis)),
        (Some(TIMESTAMP), Value::Int64(millis)) => Some(*millis),
        _ => None,
    };
    let decimal = match (logical, value, schema.and_then(Schema::decimal_scale)) {
        (Some(DECIMAL), Value::Bytes(bytes), Some(scale)) => {
            let unscaled = unscaled_value(bytes)
                .ok_or_else(|| DataError("Decimal value does not fit in 128 bits".into()))?;
            Some(JavaDecimal::from_unscaled(unscaled, scale))
        }
        _ => None,
    };

    if target == Type::String {
        let text = match (date_millis, &decimal, value) {
            (Some(millis), _, _) => date_text(millis),
            (_, Some(decimal), _) => decimal.to_java_string(),
            (_, _, Value::Bytes(bytes)) => base64::engine::general_purpose::STANDARD.encode(bytes),
            (_, _, Value::Float32(v)) => java_float(*v),
            (_, _, Value::Float64(v)) => java_double(*v),
            (_, _, other) => other.to_string(),
        };
        return Ok(Value::String(text));
    }

    // A Date/Time/Timestamp casts from its underlying number (`encodeLogicalType`).
    let number = match (&decimal, value) {
        (Some(decimal), _) => Some(Number::Decimal {
            long: decimal.long_value(),
            double: decimal.double_value(),
        }),
        (None, Value::Int8(v)) => Some(Number::Integer(i64::from(*v))),
        (None, Value::Int16(v)) => Some(Number::Integer(i64::from(*v))),
        (None, Value::Int32(v)) => Some(Number::Integer(i64::from(*v))),
        (None, Value::Int64(v)) => Some(Number::Integer(*v)),
        (None, Value::Float32(v)) => Some(Number::Floating(f64::from(*v))),
        (None, Value::Float64(v)) => Some(Number::Floating(*v)),
        _ => None,
    };
    Ok(match (target, number, value) {
        (Type::Int8, Some(n), _) => Value::Int8(n.int() as i8),
        (Type::Int16, Some(n), _) => Value::Int16(n.int() as i16),
        (Type::Int32, Some(n), _) => Value::Int32(n.int()),
        (Type::Int64, Some(n), _) => Value::Int64(n.long()),
        (Type::Float32, Some(n), _) => Value::Float32(n.double() as f32),
        (Type::Float64, Some(n), _) => Value::Float64(n.double()),
        (Type::Boolean, Some(n), _) => Value::Boolean(n.long() != 0),
        (ty, None, Value::Boolean(b)) => {
            let one = i64::from(*b);
            match ty {
                Type::Int8 => Value::Int8(one as i8),
                Type::Int16 => Value::Int16(one as i16),
                Type::Int32 => Value::Int32(one as i32),
                Type::Int64 => Value::Int64(one),
                Type::Float32 => Value::Float32(one as f32),
                Type::Float64 => Value::Float64(one as f64),
                _ => Value::Boolean(*b),
            }
        }
        (ty, None, Value::String(text)) => match ty {
            Type::Int8 => Value::Int8(text.parse().map_err(|_| out_of_range(text))?),
            Type::Int16 => Value::Int16(text.parse().map_err(|_| out_of_range(text))?),
            Type::Int32 => Value::Int32(text.parse().map_err(|_| out_of_range(text))?),
            Type::Int64 => Value::Int64(text.parse().map_err(|_| out_of_range(text))?),
            Type::Float32 => {
                Value::Float32(java_parse_float(text).ok_or_else(|| out_of_range(text))?)
            }
            Type::Float64 => {
                Value::Float64(java_parse_double(text).ok_or_else(|| out_of_range(text))?)
            }
            _ => Value::Boolean(text.eq_ignore_ascii_case("true")),
        },
        (_, _, other) => return Err(unexpected(other)),
    })
}

impl Cast {
    fn configure(options: &mut Options, operand: Operand) -> Result<Cast, ConfigError> {
        let spec = options.list("spec");
        let replace_null_with_default = options.boolean("replace.null.with.default", true);
        let casts = match &spec {
            None => {
                options.missing("spec");
                None
            }
            Some(spec) => match parse_spec(spec) {
                Ok(casts) => Some(casts),
                Err(message) => {
                    options.error("spec", message);
                    None
                }
            },
        };
        options.check()?;
        Ok(Cast {
            operand,
            casts: casts.expect("a bad spec is a config error"),
            replace_null_with_default,
            schemas: SchemaCache::new(),
        })
    }

    fn target_schema(ty: Type) -> Schema {
        Schema::new(ty)
    }

    fn updated_schema(&self, schema: &Schema) -> Result<Schema, DataError> {
        let mut updated = match &self.casts {
            Casts::Whole(ty) => {
                let mut basics = copy_schema_basics(schema);
                basics.ty = *ty;
                basics.key_schema = None;
                basics.value_schema = None;
                basics
            }
            Casts::Fields(casts) => {
                let mut updated = struct_with_basics(schema);
                for field in &schema.fields {
                    let field_schema = match casts.get(&field.name) {
                        None => field.schema.clone(),
                        Some(ty) => {
                            let mut cast = Cast::target_schema(*ty);
                            cast.optional = field.schema.optional;
                            if let Some(default) = &field.schema.default {
                                cast.default = Some(cast_value(Some(&field.schema), default, *ty)?);
                            }
                            cast.into()
                        }
                    };
                    add_field(&mut updated, &field.name, field_schema)?;
                }
                updated
            }
        };
        updated.optional = schema.optional;
        if let Some(default) = &schema.default {
            updated.default = match &self.casts {
                Casts::Whole(ty) => Some(cast_value(Some(schema), default, *ty)?),
                Casts::Fields(_) => Some(default.clone()),
            };
        }
        Ok(updated)
    }
}

impl Transform for Cast {
    fn apply(&self, mut record: Record) -> Result<Option<Record>, DataError> {
        if self.operand.value(&record).is_null() {
            return Ok(Some(record));
        }
        let Some(schema) = self.operand.schema(&record).cloned() else {
            let (_, value) = self.operand.take(&mut record);
            let updated = match &self.casts {
                Casts::Whole(ty) => cast_value(None, &value, *ty)?,
                Casts::Fields(casts) => {
                    let mut entries = into_map(value, PURPOSE)?;
                    for (field, ty) in casts {
                        let cast = match map_get(&entries, field) {
                            Some(v) => cast_value(None, v, *ty)?,
                            None => Value::Null,
                        };
                        map_put(&mut entries, field, cast);
                    }
                    Value::Map(entries)
                }
            };
            self.operand.put(&mut record, None, updated);
            return Ok(Some(record));
        };
        let updated_schema = self
            .schemas
            .get_or_build(&schema, |s| self.updated_schema(s))?;
        let updated = match &self.casts {
            Casts::Whole(ty) => cast_value(Some(&schema), self.operand.value(&record), *ty)?,
            Casts::Fields(casts) => {
                let value = require_struct(self.operand.value(&record), PURPOSE)?;
                let mut updated = Struct::new(updated_schema.clone());
                for field in &value.schema.fields {
                    let original = struct_get(value, &field.name, self.replace_null_with_default)?;
                    let cast = match casts.get(&field.name) {
                        Some(ty) => cast_value(Some(&field.schema), &original, *ty)?,
                        None => original,
                    };
                    updated.put(&field.name, cast)?;
                }
                Value::Struct(updated)
            }
        };
        self.operand.put(&mut record, Some(updated_schema), updated);
        Ok(Some(record))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::data::SchemaRef;

    fn transform(operand: Operand, spec: &str) -> Cast {
        configure(&[("spec", spec)], |o| Cast::configure(o, operand)).unwrap()
    }

    fn whole(spec: &str, schema: Option<Schema>, value: Value) -> Result<Record, DataError> {
        let record = Record::new("topic", schema.map(SchemaRef::new), value);
        Ok(transform(Operand::Value, spec).apply(record)?.unwrap())
    }

    /// Kafka's `CastTest.testConfig*` and `testUnsupportedTargetType`.
    #[test]
    fn config_errors() {
        let errors =
            |spec: &str| option_errors(&[("spec", spec)], |o| Cast::configure(o, Operand::Key));
        let cases = [
            ("", "Must specify at least one field to cast."),
            (
                "foo:faketype",
                "Invalid type found in casting spec: faketype",
            ),
            (
                "foo:array",
                "Cast transformation does not support casting to ARRAY; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]",
            ),
            (
                "array",
                "Cast transformation does not support casting to ARRAY; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]",
            ),
            (
                "foo:bytes",
                "Cast transformation does not support casting to BYTES; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING]",
            ),
            (
                "foo:int8:extra",
                "Invalid value [foo:int8:extra] for configuration renames: Invalid rename mapping: foo:int8:extra",
            ),
            (
                "foo:int8,int32",
                "Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec",
            ),
        ];
        for (spec, message) in cases {
            assert_eq!(errors(spec), one_error("spec", message), "{spec}");
        }
    }

    /// Kafka's `CastTest.castNull*`.
    #[test]
    fn nulls_pass_through() {
        let xform = transform(Operand::Value, "foo:int64");
        for schema in [None, Some(SchemaRef::new(Schema::new(Type::String)))] {
            let record = Record::new("topic", schema, Value::Null).with_key(None, s("key"));
            assert_eq!(xform.apply(record.clone()).unwrap(), Some(record));
        }
    }

    /// Kafka's `CastTest.castWholeRecord*WithSchema*` and `castWholeRecord*Schemaless*`.
    #[test]
    fn whole_values_cast_with_and_without_schema() {
        let cases = [
            ("int8", Value::Int8(42)),
            ("int16", Value::Int16(42)),
            ("int32", Value::Int32(42)),
            ("int64", Value::Int64(42)),
            ("float32", Value::Float32(42.0)),
            ("float64", Value::Float64(42.0)),
            ("boolean", Value::Boolean(true)),
            ("string", s("42")),
        ];
        for (spec, expected) in cases {
            let out = whole(spec, Some(Schema::new(Type::Int32)), Value::Int32(42)).unwrap();
            assert_eq!(out.value, expected, "{spec}");
            assert_eq!(out.value_schema.unwrap().ty, inferred_type(&expected));
            let out = whole(spec, None, Value::Int32(42)).unwrap();
            assert_eq!(out.value, expected, "{spec}");
            assert_eq!(out.value_schema, None);
        }
        let out = whole("boolean", Some(Schema::new(Type::Int32)), Value::Int32(0)).unwrap();
        assert_eq!(out.value, Value::Boolean(false));
        assert_eq!(
            whole("int8", None, Value::Array(vec![])).unwrap_err().0,
            "Cast transformation does not support casting from ARRAY; supported types are [INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES]"
        );
    }

    /// Kafka's `CastTest.castWholeBigDecimalRecordValueWithSchemaString`,
    /// `castWholeDateRecordValueWithSchemaString`, `castWholeRecordDefaultValue`.
    #[test]
    fn whole_logical_values_and_defaults_cast() {
        let out = whole("string", Some(Schema::decimal(0)), Value::Bytes(vec![42])).unwrap();
        assert_eq!(out.value, s("42"));
        let out = whole(
            "string",
            Some(Schema::timestamp()),
            Value::Int64(1_483_425_001_864),
        )
        .unwrap();
        assert_eq!(out.value, s("2017-01-03T06:30:01.864Z"));
        // The updated schema keeps the original's name and version, as Kafka's does.
        assert_eq!(out.value_schema.unwrap().name.as_deref(), Some(TIMESTAMP));

        let out = whole(
            "int32",
            Some(Schema::new(Type::Int64).with_default(Value::Int64(12))),
            Value::Int64(42),
        )
        .unwrap();
        assert_eq!(out.value, Value::Int32(42));
        assert_eq!(out.value_schema.unwrap().default, Some(Value::Int32(12)));
    }

    /// Kafka's `CastTest.castLogicalToPrimitive` and `castLogicalToString`.
    #[test]
    fn logical_fields_cast_to_numbers_and_text() {
        let schema = schema(&[
            ("date_to_int32", Schema::date()),
            ("timestamp_to_int64", Schema::timestamp()),
            ("time_to_int64", Schema::time()),
            ("decimal_to_int32", Schema::decimal(0)),
            ("timestamp_to_float64", Schema::timestamp()),
            ("null_timestamp_to_int32", Schema::timestamp().optional()),
            ("date", Schema::date()),
            ("decimal", Schema::decimal(0)),
            ("time", Schema::time()),
            ("timestamp", Schema::timestamp()),
        ]);
        let value = structure(
            &schema,
            &[
                ("date_to_int32", Value::Int32(1)),
                ("timestamp_to_int64", Value::Int64(0)),
                ("time_to_int64", Value::Int32(1)),
                // 2^31: narrowed to Integer.MIN_VALUE.
                ("decimal_to_int32", Value::Bytes(vec![0x00, 0x80, 0, 0, 0])),
                ("timestamp_to_float64", Value::Int64(i64::MAX)),
                ("date", Value::Int32(1)),
                ("decimal", Value::Bytes(vec![0x07, 0xbe])),
                ("time", Value::Int32(3_600_000)),
                ("timestamp", Value::Int64(1_483_425_001_864)),
            ],
        );
        let out = transform(
            Operand::Value,
            "date_to_int32:int32,timestamp_to_int64:int64,time_to_int64:int64,decimal_to_int32:int32,timestamp_to_float64:float64,null_timestamp_to_int32:int32,date:string,decimal:string,time:string,timestamp:string",
        )
        .apply(Record::new("topic", Some(schema), Value::Struct(value)))
        .unwrap()
        .unwrap();
        let Value::Struct(cast) = out.value else {
            panic!("a struct")
        };
        let expected = [
            ("date_to_int32", Value::Int32(1)),
            ("timestamp_to_int64", Value::Int64(0)),
            ("time_to_int64", Value::Int64(1)),
            ("decimal_to_int32", Value::Int32(i32::MIN)),
            ("timestamp_to_float64", Value::Float64(9.223372036854776E18)),
            ("null_timestamp_to_int32", Value::Null),
            ("date", s("1970-01-02")),
            ("decimal", s("1982")),
            ("time", s("01:00:00.000Z")),
            ("timestamp", s("2017-01-03T06:30:01.864Z")),
        ];
        for (name, value) in expected {
            assert_eq!(cast.get(name), Some(&value), "{name}");
        }
        assert_eq!(
            cast.schema
                .get_field("null_timestamp_to_int32")
                .unwrap()
                .schema
                .ty,
            Type::Int32
        );
    }

    /// Kafka's `CastTest.castFieldsWithSchema`.
    #[test]
    fn struct_fields_cast() {
        let schema = schema(&[
            ("int8", Schema::new(Type::Int8)),
            ("int16", Schema::new(Type::Int16).optional()),
            (
                "int32",
                Schema::new(Type::Int32).with_default(Value::Int32(2)),
            ),
            ("int64", Schema::new(Type::Int64)),
            ("float32", Schema::new(Type::Float32)),
            (
                "float64",
                Schema::new(Type::Float64).with_default(Value::Float64(-1.125)),
            ),
            ("boolean", Schema::new(Type::Boolean)),
            ("string", Schema::new(Type::String)),
            ("optional", Schema::new(Type::Float32).optional()),
            ("timestamp", Schema::timestamp()),
            ("bytes", Schema::new(Type::Bytes)),
        ]);
        let value = structure(
            &schema,
            &[
                ("int8", Value::Int8(8)),
                ("int16", Value::Int16(16)),
                ("int32", Value::Int32(32)),
                ("int64", Value::Int64(64)),
                ("float32", Value::Float32(32.0)),
                ("float64", Value::Float64(-64.0)),
                ("boolean", Value::Boolean(true)),
                ("string", s("42")),
                ("timestamp", Value::Int64(0)),
                (
                    "bytes",
                    Value::Bytes(vec![0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10]),
                ),
            ],
        );
        let out = transform(
            Operand::Value,
            "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8,string:int32,optional:int32,bytes:string",
        )
        .apply(Record::new("topic", Some(schema), Value::Struct(value)))
        .unwrap()
        .unwrap();
        let Value::Struct(cast) = out.value else {
            panic!("a struct")
        };
        let expected = [
            ("int8", Value::Int16(8)),
            ("int16", Value::Int32(16)),
            ("int32", Value::Int64(32)),
            ("int64", Value::Boolean(true)),
            ("float32", Value::Float64(32.0)),
            ("float64", Value::Boolean(true)),
            ("boolean", Value::Int8(1)),
            ("string", Value::Int32(42)),
            ("optional", Value::Null),
            ("timestamp", Value::Int64(0)),
            ("bytes", s("/ty6mHZUMhA=")),
        ];
        for (name, value) in expected {
            assert_eq!(cast.get(name), Some(&value), "{name}");
        }
        let field = |n: &str| cast.schema.get_field(n).unwrap().schema.clone();
        assert!(field("int16").optional);
        assert_eq!(field("int32").default, Some(Value::Int64(2)));
        assert_eq!(field("float64").default, Some(Value::Boolean(true)));
        assert_eq!(*field("timestamp"), Schema::timestamp());
    }

    /// Kafka's `CastTest.castFieldsSchemaless` and `castFieldWithDefaultValueRecordWithSchema`.
    #[test]
    fn map_fields_cast_and_defaults_follow_the_option() {
        let value = map(&[
            ("int8", Value::Int8(8)),
            ("int16", Value::Int16(16)),
            ("int32", Value::Int32(32)),
            ("int64", Value::Int64(64)),
            ("float32", Value::Float32(32.0)),
            ("float64", Value::Float64(-64.0)),
            ("boolean", Value::Boolean(true)),
            ("string", s("42")),
        ]);
        let out = transform(
            Operand::Value,
            "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8,string:int32",
        )
        .apply(Record::new("topic", None, value))
        .unwrap()
        .unwrap();
        assert_eq!(
            out.value,
            map(&[
                ("int8", Value::Int16(8)),
                ("int16", Value::Int32(16)),
                ("int32", Value::Int64(32)),
                ("int64", Value::Boolean(true)),
                ("float32", Value::Float64(32.0)),
                ("float64", Value::Boolean(true)),
                ("boolean", Value::Int8(1)),
                ("string", Value::Int32(42)),
            ])
        );

        for (replace, expected) in [("false", Value::Null), ("true", s("10"))] {
            let xform = configure(
                &[
                    ("spec", "magic:string"),
                    ("replace.null.with.default", replace),
                ],
                |o| Cast::configure(o, Operand::Value),
            )
            .unwrap();
            let schema = schema(&[(
                "magic",
                Schema::new(Type::Int32)
                    .optional()
                    .with_default(Value::Int32(10)),
            )]);
            let out = xform
                .apply(Record::new(
                    "topic",
                    Some(schema.clone()),
                    Value::Struct(Struct::new(schema)),
                ))
                .unwrap()
                .unwrap();
            let Value::Struct(cast) = out.value else {
                panic!("a struct")
            };
            assert_eq!(cast.schema.fields[0].schema.ty, Type::String);
            assert_eq!(cast.values[0], expected);
        }
    }

    #[test]
    fn strings_parse_as_java_parses_them() {
        let cases = [
            ("int8", "127", Ok(Value::Int8(127))),
            (
                "int8",
                "128",
                Err("Value (128) was out of range for requested data type"),
            ),
            ("int32", "+5", Ok(Value::Int32(5))),
            (
                "int32",
                " 5",
                Err("Value ( 5) was out of range for requested data type"),
            ),
            ("float64", " 1.5d ", Ok(Value::Float64(1.5))),
            (
                "float64",
                "-Infinity",
                Ok(Value::Float64(f64::NEG_INFINITY)),
            ),
            (
                "float64",
                "inf",
                Err("Value (inf) was out of range for requested data type"),
            ),
            ("float32", "0.1", Ok(Value::Float32(0.1))),
            ("boolean", "TRUE", Ok(Value::Boolean(true))),
            ("boolean", "yes", Ok(Value::Boolean(false))),
        ];
        for (spec, text, expected) in cases {
            let out = whole(spec, None, s(text)).map(|r| r.value).map_err(|e| e.0);
            assert_eq!(out, expected.map_err(str::to_string), "{spec} {text}");
        }
        assert_eq!(
            whole("int32", None, Value::Bytes(vec![1])).unwrap_err().0,
            "Unexpected type in Cast transformation: class [B"
        );
        // Floats narrow as Java's casts do.
        assert_eq!(
            whole("int8", None, Value::Float64(300.7)).unwrap().value,
            Value::Int8(44)
        );
        assert_eq!(
            whole("int32", None, Value::Float64(1e20)).unwrap().value,
            Value::Int32(i32::MAX)
        );
    }
}
