//! What Kafka's transforms share (`transforms.util.Requirements`, `SchemaUtil`, the
//! `$Key`/`$Value` split, the per-transform schema cache), written once so every
//! transform reports a wrong input with Connect's exact words.

use std::sync::{Arc, Mutex};

use crate::data::{DataError, Record, Schema, SchemaRef, Struct, Type, Value};

/// Which half of a record a `$Key` or `$Value` transform works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operand {
    Key,
    Value,
}

impl Operand {
    pub fn schema(self, record: &Record) -> Option<&SchemaRef> {
        match self {
            Operand::Key => record.key_schema.as_ref(),
            Operand::Value => record.value_schema.as_ref(),
        }
    }

    pub fn value(self, record: &Record) -> &Value {
        match self {
            Operand::Key => &record.key,
            Operand::Value => &record.value,
        }
    }

    /// Moves the operand's schema and value out of the record (leaving null behind), so
    /// a transform can rebuild it without cloning; `put` sets the result.
    pub fn take(self, record: &mut Record) -> (Option<SchemaRef>, Value) {
        match self {
            Operand::Key => (
                record.key_schema.take(),
                std::mem::replace(&mut record.key, Value::Null),
            ),
            Operand::Value => (
                record.value_schema.take(),
                std::mem::replace(&mut record.value, Value::Null),
            ),
        }
    }

    pub fn put(self, record: &mut Record, schema: Option<SchemaRef>, value: Value) {
        match self {
            Operand::Key => {
                record.key_schema = schema;
                record.key = value;
            }
            Operand::Value => {
                record.value_schema = schema;
                record.value = value;
            }
        }
    }
}

/// Entries of a schemaless map (`Requirements.requireMap`).
pub(crate) fn require_map<'a>(
    value: &'a Value,
    purpose: &str,
) -> Result<&'a Vec<(Value, Value)>, DataError> {
    match value {
        Value::Map(entries) => Ok(entries),
        other => Err(DataError(format!(
            "Only Map objects supported in absence of schema for [{purpose}], found: {}",
            other.java_class()
        ))),
    }
}

/// `Requirements.requireMap` on an owned value.
pub(crate) fn into_map(value: Value, purpose: &str) -> Result<Vec<(Value, Value)>, DataError> {
    match value {
        Value::Map(entries) => Ok(entries),
        other => Err(require_map(&other, purpose).unwrap_err()),
    }
}

/// `Requirements.requireStruct`.
pub(crate) fn require_struct<'a>(value: &'a Value, purpose: &str) -> Result<&'a Struct, DataError> {
    match value {
        Value::Struct(s) => Ok(s),
        other => Err(DataError(format!(
            "Only Struct objects supported for [{purpose}], found: {}",
            other.java_class()
        ))),
    }
}

/// `Requirements.requireSchema`.
pub(crate) fn require_schema<'a>(
    schema: Option<&'a SchemaRef>,
    purpose: &str,
) -> Result<&'a SchemaRef, DataError> {
    schema.ok_or_else(|| DataError(format!("Schema required for [{purpose}]")))
}

/// The Kafka offset of a sink record (`Requirements.requireSinkRecord`): a record without
/// one is a source record.
pub(crate) fn require_sink_offset(record: &Record, purpose: &str) -> Result<i64, DataError> {
    record.kafka_offset.ok_or_else(|| {
        DataError(format!(
            "Only SinkRecord supported for [{purpose}], found: org.apache.kafka.connect.source.SourceRecord"
        ))
    })
}

/// `SchemaUtil.copySchemaBasics(source, SchemaBuilder.struct())`: a required struct with
/// the source's name, version, doc and parameters and no fields. Optionality and the
/// default are not carried over, as in Kafka.
pub(crate) fn struct_with_basics(source: &Schema) -> Schema {
    let mut schema = Schema::new(Type::Struct);
    schema.name = source.name.clone();
    schema.version = source.version;
    schema.doc = source.doc.clone();
    schema.parameters = source.parameters.clone();
    schema
}

/// `SchemaUtil.copySchemaBasics(source)`: the same type with name, version, doc and
/// parameters; an array keeps its element schema. Kafka's copy of a map loses the key and
/// value schemas, which leaves a schema no value fits, so they are kept here.
pub(crate) fn copy_schema_basics(source: &Schema) -> Schema {
    let mut schema = struct_with_basics(source);
    schema.ty = source.ty;
    if matches!(source.ty, Type::Array | Type::Map) {
        schema.key_schema = source.key_schema.clone();
        schema.value_schema = source.value_schema.clone();
    }
    schema
}

/// `SchemaBuilder.field`, which refuses an empty or repeated name.
pub(crate) fn add_field(
    schema: &mut Schema,
    name: &str,
    field_schema: SchemaRef,
) -> Result<(), DataError> {
    if name.is_empty() {
        return Err(DataError("fieldName cannot be null.".into()));
    }
    if schema.get_field(name).is_some() {
        return Err(DataError(format!(
            "Cannot create field because of field name duplication {name}"
        )));
    }
    let taken = std::mem::replace(schema, Schema::new(Type::Struct));
    *schema = taken.field(name, field_schema);
    Ok(())
}

/// A field's value by name: with the field's default standing in for null
/// (`Struct.get`) or the raw value (`Struct.getWithoutDefault`).
pub(crate) fn struct_get(s: &Struct, name: &str, with_default: bool) -> Result<Value, DataError> {
    let Some(field) = s.schema.get_field(name) else {
        return Err(DataError(format!("{name} is not a valid field name")));
    };
    let value = &s.values[field.index];
    if with_default
        && value.is_null()
        && let Some(default) = &field.schema.default
    {
        return Ok(default.clone());
    }
    Ok(value.clone())
}

pub(crate) fn map_get<'a>(entries: &'a [(Value, Value)], key: &str) -> Option<&'a Value> {
    entries
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

/// Java's `Map.put`: replaces the value of an existing key in place, else appends.
pub(crate) fn map_put(entries: &mut Vec<(Value, Value)>, key: &str, value: Value) {
    match entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
        Some(entry) => entry.1 = value,
        None => entries.push((Value::String(key.to_string()), value)),
    }
}

/// Java's `String.split` on one character: trailing empty strings are dropped, and a
/// string without the separator is one element.
pub(crate) fn java_split(text: &str, separator: char) -> Vec<&str> {
    if text.is_empty() {
        return vec![""];
    }
    let mut parts: Vec<&str> = text.split(separator).collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// Java's `List.toString` of config list values, as `ConfigException` prints them.
pub(crate) fn java_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

/// `ConnectSchema.toString`.
pub(crate) fn java_schema(schema: &Schema) -> String {
    let ty = schema.ty.name().to_uppercase();
    let ty = match schema.ty {
        Type::Float32 => "FLOAT32".to_string(),
        Type::Float64 => "FLOAT64".to_string(),
        _ => ty,
    };
    match &schema.name {
        Some(name) => format!("Schema{{{name}:{ty}}}"),
        None => format!("Schema{{{ty}}}"),
    }
}

/// A record as Java's `SinkRecord`/`SourceRecord.toString` prints it in an error.
pub(crate) fn java_record(record: &Record) -> String {
    let schema = |s: &Option<SchemaRef>| s.as_deref().map_or("null".to_string(), java_schema);
    let json_map = |m: &Option<serde_json::Map<String, serde_json::Value>>| match m {
        None => "null".to_string(),
        Some(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| match v {
                    serde_json::Value::String(s) => format!("{k}={s}"),
                    other => format!("{k}={other}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let opt = |v: Option<i64>| v.map_or("null".to_string(), |v| v.to_string());
    let headers = record
        .headers
        .iter()
        .map(|h| {
            let value = h.value.as_ref().map_or("null".to_string(), |v| {
                String::from_utf8_lossy(v).into_owned()
            });
            format!("ConnectHeader(key={}, value={value}, schema=null)", h.key)
        })
        .collect::<Vec<_>>();
    let headers = if headers.is_empty() {
        String::new()
    } else {
        format!("[{}]", headers.join(", "))
    };
    let connect = format!(
        "ConnectRecord{{topic='{}', kafkaPartition={}, key={}, keySchema={}, value={}, valueSchema={}, timestamp={}, headers=ConnectHeaders(headers={headers})}}",
        record.topic,
        record
            .partition
            .map_or("null".to_string(), |p| p.to_string()),
        record.key,
        schema(&record.key_schema),
        record.value,
        schema(&record.value_schema),
        opt(record.timestamp),
    );
    match record.kafka_offset {
        Some(offset) => format!(
            "SinkRecord{{kafkaOffset={offset}, timestampType={}, originalTopic={}, originalKafkaPartition={}, originalKafkaOffset={offset}}} {connect}",
            if record.timestamp.is_some() {
                "CreateTime"
            } else {
                "NoTimestampType"
            },
            record.topic,
            record
                .partition
                .map_or("null".to_string(), |p| p.to_string()),
        ),
        None => format!(
            "SourceRecord{{sourcePartition={}, sourceOffset={}}} {connect}",
            json_map(&record.source_partition),
            json_map(&record.source_offset)
        ),
    }
}

/// Java's `Double.toString`: the shortest digits that read back as the same double,
/// plain between 10^-3 and 10^7, else `d.dddE-n`.
pub(crate) fn java_double(v: f64) -> String {
    java_floating(format!("{v:e}"), v.is_nan(), v.is_infinite(), v < 0.0)
}

/// Java's `Float.toString`: as [`java_double`], with the digits of the float.
pub(crate) fn java_float(v: f32) -> String {
    java_floating(format!("{v:e}"), v.is_nan(), v.is_infinite(), v < 0.0)
}

fn java_floating(scientific: String, nan: bool, infinite: bool, negative: bool) -> String {
    if nan {
        return "NaN".into();
    }
    if infinite {
        return if negative { "-Infinity" } else { "Infinity" }.into();
    }
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if digits == "0" {
        return format!("{sign}0.0");
    }
    if (-3..7).contains(&exponent) {
        let point = exponent + 1;
        if point <= 0 {
            return format!("{sign}0.{}{digits}", "0".repeat((-point) as usize));
        }
        let point = point as usize;
        if digits.len() <= point {
            return format!("{sign}{digits}{}.0", "0".repeat(point - digits.len()));
        }
        let (int, frac) = digits.split_at(point);
        return format!("{sign}{int}.{frac}");
    }
    let (first, rest) = digits.split_at(1);
    let rest = if rest.is_empty() { "0" } else { rest };
    format!("{sign}{first}.{rest}E{exponent}")
}

/// A header value as Connect's `SimpleHeaderConverter` writes it: `Values.convertToString`
/// (strings as they are, bytes in base64, structs, maps and arrays in Connect's JSON-like
/// form); null is a header without a value.
pub(crate) fn header_bytes(value: &Value) -> Option<bytes::Bytes> {
    if value.is_null() {
        return None;
    }
    let mut out = String::new();
    append_value(&mut out, value, false);
    Some(bytes::Bytes::from(out))
}

fn append_value(out: &mut String, value: &Value, embedded: bool) {
    use base64::Engine as _;
    match value {
        Value::String(s) if embedded => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '"' => out.push_str("\\\""),
                    other => out.push(other),
                }
            }
            out.push('"');
        }
        Value::Bytes(b) => {
            let encoded = base64::engine::general_purpose::STANDARD.encode(b);
            if embedded {
                out.push('"');
                out.push_str(&encoded);
                out.push('"');
            } else {
                out.push_str(&encoded);
            }
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                append_value(out, item, true);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                append_value(out, k, true);
                out.push(':');
                append_value(out, v, true);
            }
            out.push('}');
        }
        Value::Struct(s) => {
            out.push('{');
            for (i, field) in s.schema.fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                append_value(out, &Value::String(field.name.clone()), true);
                out.push(':');
                let value = s.get(&field.name).unwrap_or(&Value::Null);
                append_value(out, value, true);
            }
            out.push('}');
        }
        Value::Float32(v) => out.push_str(&java_float(*v)),
        Value::Float64(v) => out.push_str(&java_double(*v)),
        other => out.push_str(&other.to_string()),
    }
}

/// What a [`SchemaCache`] is keyed by: a schema (the same `Arc`, or an equal schema), or
/// a pair of them.
pub(crate) trait CacheKey: Clone {
    fn same(&self, other: &Self) -> bool;
}

impl CacheKey for SchemaRef {
    fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(self, other) || **self == **other
    }
}

impl<A: CacheKey, B: CacheKey> CacheKey for (A, B) {
    fn same(&self, other: &Self) -> bool {
        self.0.same(&other.0) && self.1.same(&other.1)
    }
}

/// Kafka's per-transform `LRUCache<Schema, Schema>(16)` of updated schemas, so a stream
/// of records with one schema builds the updated schema once and shares it.
pub(crate) struct SchemaCache<K: CacheKey = SchemaRef> {
    entries: Mutex<Vec<(K, SchemaRef)>>,
}

/// Kafka's cache size.
const SCHEMA_CACHE_ENTRIES_MAX: usize = 16;

impl<K: CacheKey> SchemaCache<K> {
    pub fn new() -> SchemaCache<K> {
        SchemaCache {
            entries: Mutex::new(Vec::with_capacity(SCHEMA_CACHE_ENTRIES_MAX)),
        }
    }

    /// The updated schema for `key`, built by `build` on a miss.
    pub fn get_or_build(
        &self,
        key: &K,
        build: impl FnOnce(&K) -> Result<Schema, DataError>,
    ) -> Result<SchemaRef, DataError> {
        {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(position) = entries.iter().position(|(k, _)| k.same(key)) {
                // Most recently used last, so the front is evicted first.
                let entry = entries.remove(position);
                let updated = entry.1.clone();
                entries.push(entry);
                return Ok(updated);
            }
        }
        let updated: SchemaRef = Arc::new(build(key)?);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= SCHEMA_CACHE_ENTRIES_MAX {
            entries.remove(0);
        }
        entries.push((key.clone(), updated.clone()));
        Ok(updated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_drops_trailing_empty_parts_as_java_does() {
        let cases: &[(&str, &[&str])] = &[
            ("a:b", &["a", "b"]),
            ("a:", &["a"]),
            (":b", &["", "b"]),
            ("a:b:c", &["a", "b", "c"]),
            ("", &[""]),
            (":", &[]),
            ("ab", &["ab"]),
        ];
        for (text, expected) in cases {
            assert_eq!(java_split(text, ':'), *expected, "{text}");
        }
    }

    #[test]
    fn floats_print_as_java_prints_them() {
        let doubles = [
            (1.0, "1.0"),
            (-64.0, "-64.0"),
            (0.25, "0.25"),
            (0.001, "0.001"),
            (0.0001, "1.0E-4"),
            (1e7, "1.0E7"),
            (1234567.0, "1234567.0"),
            (9.223372036854776e18, "9.223372036854776E18"),
            (0.0, "0.0"),
            (-1.125, "-1.125"),
        ];
        for (v, expected) in doubles {
            assert_eq!(java_double(v), expected, "{v}");
        }
        assert_eq!(java_float(0.1), "0.1");
        assert_eq!(java_float(32.0), "32.0");
        assert_eq!(java_float(f32::NAN), "NaN");
    }

    #[test]
    fn header_values_are_written_as_the_simple_header_converter_writes_them() {
        let schema: SchemaRef = Schema::new(Type::Struct)
            .field("a", Schema::new(Type::Int32))
            .field("b", Schema::new(Type::String))
            .into();
        let s = Struct::new(schema)
            .with("a", Value::Int32(1))
            .unwrap()
            .with("b", Value::String("x\"y".into()))
            .unwrap();
        let cases = [
            (Value::String("d".into()), Some("d")),
            (Value::Int64(42), Some("42")),
            (Value::Boolean(true), Some("true")),
            (Value::Bytes(b"hi".to_vec()), Some("aGk=")),
            (
                Value::Array(vec![Value::Int32(1), Value::String("a".into())]),
                Some("[1,\"a\"]"),
            ),
            (Value::Struct(s), Some("{\"a\":1,\"b\":\"x\\\"y\"}")),
            (Value::Null, None),
        ];
        for (value, expected) in cases {
            assert_eq!(
                header_bytes(&value).as_deref(),
                expected.map(str::as_bytes),
                "{value:?}"
            );
        }
    }
}
