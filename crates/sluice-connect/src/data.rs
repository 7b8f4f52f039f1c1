//! Kafka Connect's data model (`org.apache.kafka.connect.data`): schemas, values and
//! structs, the logical types Connect names (Decimal, Date, Time, Timestamp), and the
//! records that flow through converters, transforms and connectors.
//!
//! Values are checked against their schema where a record is built from outside input
//! (a converter, a connector), with Connect's `DataException` wording, so a bad record is
//! refused where it enters and not half-way through a transform.

use std::fmt;
use std::sync::Arc;

/// Connect's `Schema.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Type {
    Int8,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Boolean,
    String,
    Bytes,
    Array,
    Map,
    Struct,
}

impl Type {
    /// The name Connect's JSON schemas use (`"int32"`, `"struct"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Type::Int8 => "int8",
            Type::Int16 => "int16",
            Type::Int32 => "int32",
            Type::Int64 => "int64",
            Type::Float32 => "float",
            Type::Float64 => "double",
            Type::Boolean => "boolean",
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::Array => "array",
            Type::Map => "map",
            Type::Struct => "struct",
        }
    }

    pub fn from_name(name: &str) -> Option<Type> {
        Some(match name {
            "int8" => Type::Int8,
            "int16" => Type::Int16,
            "int32" => Type::Int32,
            "int64" => Type::Int64,
            "float" => Type::Float32,
            "double" => Type::Float64,
            "boolean" => Type::Boolean,
            "string" => Type::String,
            "bytes" => Type::Bytes,
            "array" => Type::Array,
            "map" => Type::Map,
            "struct" => Type::Struct,
            _ => return None,
        })
    }

    /// Java's `Schema.Type` name, as Connect's error messages print it.
    pub fn java_name(self) -> &'static str {
        match self {
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

    pub fn is_primitive(self) -> bool {
        !matches!(self, Type::Array | Type::Map | Type::Struct)
    }
}

/// Logical type names (`org.apache.kafka.connect.data.*`).
pub const DECIMAL: &str = "org.apache.kafka.connect.data.Decimal";
pub const DECIMAL_SCALE: &str = "scale";
pub const DATE: &str = "org.apache.kafka.connect.data.Date";
pub const TIME: &str = "org.apache.kafka.connect.data.Time";
pub const TIMESTAMP: &str = "org.apache.kafka.connect.data.Timestamp";

/// A schema's parameters in the order they were set, as Connect's `SchemaBuilder` keeps
/// them (a `LinkedHashMap`): the JSON converter's `parameters`, Confluent's
/// `connect.parameters` and an Avro enum's symbols come out in that order. Equality
/// ignores the order, as Java's `Map.equals` does.
#[derive(Debug, Clone, Default)]
pub struct Parameters(Vec<(String, String)>);

impl Parameters {
    /// Sets `key`, in place when it is set already (a `LinkedHashMap` keeps the first
    /// insertion's position); the value it replaced.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, old)) => Some(std::mem::replace(old, value)),
            None => {
                self.0.push((key, value));
                None
            }
        }
    }

    pub fn get(&self, key: &str) -> Option<&String> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn remove(&mut self, key: &str) -> Option<String> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// (key, value) in the order they were first set.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }
}

impl PartialEq for Parameters {
    fn eq(&self, other: &Parameters) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl<'a> IntoIterator for &'a Parameters {
    type Item = (&'a String, &'a String);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, String)>,
        fn(&'a (String, String)) -> (&'a String, &'a String),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl FromIterator<(String, String)> for Parameters {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Parameters {
        let mut parameters = Parameters::default();
        for (k, v) in pairs {
            parameters.insert(k, v);
        }
        parameters
    }
}

impl std::ops::Index<&str> for Parameters {
    type Output = String;

    fn index(&self, key: &str) -> &String {
        self.get(key)
            .unwrap_or_else(|| panic!("no schema parameter {key}"))
    }
}

/// A field of a struct schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub index: usize,
    pub schema: SchemaRef,
}

/// Connect's `Schema` (immutable once built; shared by reference).
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub ty: Type,
    pub optional: bool,
    pub default: Option<Value>,
    pub name: Option<String>,
    pub version: Option<i32>,
    pub doc: Option<String>,
    pub parameters: Parameters,
    /// Struct fields, in order.
    pub fields: Vec<Field>,
    /// Map keys.
    pub key_schema: Option<SchemaRef>,
    /// Map values and array elements.
    pub value_schema: Option<SchemaRef>,
}

pub type SchemaRef = Arc<Schema>;

impl Schema {
    pub fn new(ty: Type) -> Schema {
        Schema {
            ty,
            optional: false,
            default: None,
            name: None,
            version: None,
            doc: None,
            parameters: Parameters::default(),
            fields: Vec::new(),
            key_schema: None,
            value_schema: None,
        }
    }

    pub fn optional(mut self) -> Schema {
        self.optional = true;
        self
    }

    pub fn named(mut self, name: impl Into<String>) -> Schema {
        self.name = Some(name.into());
        self
    }

    pub fn with_version(mut self, version: i32) -> Schema {
        self.version = Some(version);
        self
    }

    pub fn with_doc(mut self, doc: impl Into<String>) -> Schema {
        self.doc = Some(doc.into());
        self
    }

    pub fn with_default(mut self, value: Value) -> Schema {
        self.default = Some(value);
        self
    }

    pub fn with_parameter(mut self, key: impl Into<String>, value: impl Into<String>) -> Schema {
        self.parameters.insert(key.into(), value.into());
        self
    }

    /// Adds a struct field at the next index.
    pub fn field(mut self, name: impl Into<String>, schema: impl Into<SchemaRef>) -> Schema {
        let index = self.fields.len();
        self.fields.push(Field {
            name: name.into(),
            index,
            schema: schema.into(),
        });
        self
    }

    pub fn array(element: impl Into<SchemaRef>) -> Schema {
        let mut schema = Schema::new(Type::Array);
        schema.value_schema = Some(element.into());
        schema
    }

    pub fn map(key: impl Into<SchemaRef>, value: impl Into<SchemaRef>) -> Schema {
        let mut schema = Schema::new(Type::Map);
        schema.key_schema = Some(key.into());
        schema.value_schema = Some(value.into());
        schema
    }

    pub fn decimal(scale: i32) -> Schema {
        Schema::new(Type::Bytes)
            .named(DECIMAL)
            .with_version(1)
            .with_parameter(DECIMAL_SCALE, scale.to_string())
    }

    pub fn date() -> Schema {
        Schema::new(Type::Int32).named(DATE).with_version(1)
    }

    pub fn time() -> Schema {
        Schema::new(Type::Int32).named(TIME).with_version(1)
    }

    pub fn timestamp() -> Schema {
        Schema::new(Type::Int64).named(TIMESTAMP).with_version(1)
    }

    pub fn get_field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The decimal scale of a Decimal schema.
    pub fn decimal_scale(&self) -> Option<i32> {
        if self.name.as_deref() != Some(DECIMAL) {
            return None;
        }
        self.parameters.get(DECIMAL_SCALE)?.parse().ok()
    }

    /// Checks `value` against this schema (Connect's `ConnectSchema.validateValue`).
    pub fn validate(&self, value: &Value) -> Result<(), DataError> {
        self.validate_at(value, None)
    }

    fn validate_at(&self, value: &Value, field: Option<&str>) -> Result<(), DataError> {
        let place = || match field {
            Some(f) => format!(" for field: \"{f}\""),
            None => String::new(),
        };
        if value.is_null() {
            if self.optional || self.default.is_some() {
                return Ok(());
            }
            return Err(DataError(format!(
                "Invalid value: null used for required field{}, schema type: {}",
                place().replacen(" for field:", ":", 1),
                self.ty.java_name()
            )));
        }
        let ok = match (self.ty, value) {
            (Type::Int8, Value::Int8(_))
            | (Type::Int16, Value::Int16(_))
            | (Type::Int32, Value::Int32(_))
            | (Type::Int64, Value::Int64(_))
            | (Type::Float32, Value::Float32(_))
            | (Type::Float64, Value::Float64(_))
            | (Type::Boolean, Value::Boolean(_))
            | (Type::String, Value::String(_))
            | (Type::Bytes, Value::Bytes(_)) => true,
            (Type::Array, Value::Array(items)) => {
                if let Some(element) = &self.value_schema {
                    for item in items {
                        element.validate_at(item, field)?;
                    }
                }
                true
            }
            (Type::Map, Value::Map(entries)) => {
                for (k, v) in entries {
                    if let Some(ks) = &self.key_schema {
                        ks.validate_at(k, field)?;
                    }
                    if let Some(vs) = &self.value_schema {
                        vs.validate_at(v, field)?;
                    }
                }
                true
            }
            (Type::Struct, Value::Struct(s)) => {
                if *s.schema != *self {
                    return Err(DataError(format!(
                        "Struct schemas do not match{}.",
                        place()
                    )));
                }
                s.validate()?;
                true
            }
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(DataError(format!(
                "Invalid Java object for schema with type {}: {}{}",
                self.ty.java_name(),
                value.java_class(),
                place()
            )))
        }
    }
}

/// A Connect value. `Map` keeps its entries in order (Connect's maps are Java maps; the
/// order is the converter's input order).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int8(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Float32(f32),
    Float64(f64),
    Boolean(bool),
    String(String),
    Bytes(Vec<u8>),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Struct(Struct),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The Java class Connect would name in an error.
    pub fn java_class(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Int8(_) => "java.lang.Byte",
            Value::Int16(_) => "java.lang.Short",
            Value::Int32(_) => "java.lang.Integer",
            Value::Int64(_) => "java.lang.Long",
            Value::Float32(_) => "java.lang.Float",
            Value::Float64(_) => "java.lang.Double",
            Value::Boolean(_) => "java.lang.Boolean",
            Value::String(_) => "java.lang.String",
            Value::Bytes(_) => "[B",
            Value::Array(_) => "java.util.ArrayList",
            Value::Map(_) => "java.util.HashMap",
            Value::Struct(_) => "org.apache.kafka.connect.data.Struct",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_struct(&self) -> Option<&Struct> {
        match self {
            Value::Struct(s) => Some(s),
            _ => None,
        }
    }

    /// A map value's entry by string key.
    pub fn map_get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// Java's `toString` of the value, as Connect's `StringConverter` and
    /// `FileStreamSinkTask` print it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "null"),
            Value::Int8(v) => write!(f, "{v}"),
            Value::Int16(v) => write!(f, "{v}"),
            Value::Int32(v) => write!(f, "{v}"),
            Value::Int64(v) => write!(f, "{v}"),
            Value::Float32(v) => write!(f, "{}", java_float(*v, f64::from(*v))),
            Value::Float64(v) => write!(f, "{}", java_float(*v, *v)),
            Value::Boolean(v) => write!(f, "{v}"),
            Value::String(v) => write!(f, "{v}"),
            Value::Bytes(v) => write!(f, "[B@{:x}", v.len()),
            Value::Array(items) => {
                write!(f, "[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{item}")?;
                }
                write!(f, "]")
            }
            Value::Map(entries) => {
                write!(f, "{{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{k}={v}")?;
                }
                write!(f, "}}")
            }
            Value::Struct(s) => {
                write!(f, "Struct{{")?;
                let mut first = true;
                for field in &s.schema.fields {
                    let value = &s.values[field.index];
                    if value.is_null() {
                        continue;
                    }
                    if !first {
                        write!(f, ",")?;
                    }
                    first = false;
                    write!(f, "{}={}", field.name, value)?;
                }
                write!(f, "}}")
            }
        }
    }
}

/// Java's `Float.toString` / `Double.toString` for the common cases (`1.0`, `0.5`,
/// `1.0E10`): the shortest text that reads back as the same `f32` or `f64`.
fn java_float<T: fmt::Display + fmt::UpperExp>(v: T, wide: f64) -> String {
    if wide.is_nan() {
        return "NaN".into();
    }
    if wide.is_infinite() {
        return if wide > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let abs = wide.abs();
    if abs != 0.0 && !(1e-3..1e7).contains(&abs) {
        let s = format!("{v:E}");
        return if s.contains('.') {
            s
        } else {
            s.replacen('E', ".0E", 1)
        };
    }
    let s = format!("{v}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

/// Connect's `Struct`: values by field index, checked against the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    pub schema: SchemaRef,
    pub values: Vec<Value>,
}

impl Struct {
    pub fn new(schema: SchemaRef) -> Struct {
        let values = vec![Value::Null; schema.fields.len()];
        Struct { schema, values }
    }

    /// Sets a field by name (Connect's `put`, which checks the value).
    pub fn put(&mut self, name: &str, value: Value) -> Result<&mut Struct, DataError> {
        let field = self
            .schema
            .get_field(name)
            .ok_or_else(|| DataError(format!("{name} is not a valid field name")))?;
        field.schema.validate_at(&value, Some(name))?;
        let index = field.index;
        self.values[index] = value;
        Ok(self)
    }

    pub fn with(mut self, name: &str, value: Value) -> Result<Struct, DataError> {
        self.put(name, value)?;
        Ok(self)
    }

    /// A field's value; a null field with a default reads as the default (Connect's
    /// `get`).
    pub fn get(&self, name: &str) -> Option<&Value> {
        let field = self.schema.get_field(name)?;
        let value = &self.values[field.index];
        if value.is_null()
            && let Some(default) = &field.schema.default
        {
            return Some(default);
        }
        Some(value)
    }

    /// Every required field has a value (Connect's `Struct.validate`).
    pub fn validate(&self) -> Result<(), DataError> {
        for field in &self.schema.fields {
            field
                .schema
                .validate_at(&self.values[field.index], Some(&field.name))?;
        }
        Ok(())
    }
}

/// Connect's `DataException`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DataError(pub String);

/// A header of a Connect record (Connect keeps a schema per header; converters of
/// headers here are the `SimpleHeaderConverter`'s string form).
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub key: String,
    pub value: Option<bytes::Bytes>,
}

/// A record between the worker and a connector: a source record on its way to Kafka or
/// a sink record on its way out (`ConnectRecord`).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub topic: String,
    pub partition: Option<i32>,
    pub key_schema: Option<SchemaRef>,
    pub key: Value,
    pub value_schema: Option<SchemaRef>,
    pub value: Value,
    pub timestamp: Option<i64>,
    pub headers: Vec<Header>,
    /// Source records: where the record came from and how far the source has read
    /// (`sourcePartition`, `sourceOffset`: JSON objects, stored in the offsets topic).
    pub source_partition: Option<serde_json::Map<String, serde_json::Value>>,
    pub source_offset: Option<serde_json::Map<String, serde_json::Value>>,
    /// Sink records: the Kafka offset it was read at.
    pub kafka_offset: Option<i64>,
}

impl Record {
    /// A record with a value and nothing else.
    pub fn new(topic: impl Into<String>, value_schema: Option<SchemaRef>, value: Value) -> Record {
        Record {
            topic: topic.into(),
            partition: None,
            key_schema: None,
            key: Value::Null,
            value_schema,
            value,
            timestamp: None,
            headers: Vec::new(),
            source_partition: None,
            source_offset: None,
            kafka_offset: None,
        }
    }

    pub fn with_key(mut self, key_schema: Option<SchemaRef>, key: Value) -> Record {
        self.key_schema = key_schema;
        self.key = key;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person() -> SchemaRef {
        Schema::new(Type::Struct)
            .named("person")
            .field("name", Schema::new(Type::String))
            .field("age", Schema::new(Type::Int32).optional())
            .field(
                "city",
                Schema::new(Type::String).with_default(Value::String("Tokyo".into())),
            )
            .into()
    }

    #[test]
    fn a_struct_checks_its_fields_as_connect_does() {
        let mut s = Struct::new(person());
        assert_eq!(
            s.put("name", Value::Int32(1)).unwrap_err().0,
            "Invalid Java object for schema with type STRING: java.lang.Integer for field: \"name\""
        );
        assert_eq!(
            s.validate().unwrap_err().0,
            "Invalid value: null used for required field: \"name\", schema type: STRING"
        );
        s.put("name", Value::String("Ann".into())).unwrap();
        s.validate().unwrap();
        assert_eq!(s.get("city"), Some(&Value::String("Tokyo".into())));
        assert_eq!(s.get("age"), Some(&Value::Null));
        assert!(s.put("nope", Value::Null).is_err());
        assert_eq!(Value::Struct(s).to_string(), "Struct{name=Ann}");
    }

    #[test]
    fn values_print_as_java_prints_them() {
        assert_eq!(Value::Float64(1.0).to_string(), "1.0");
        assert_eq!(Value::Float64(0.25).to_string(), "0.25");
        assert_eq!(Value::Float64(1e10).to_string(), "1.0E10");
        assert_eq!(Value::Float32(0.1).to_string(), "0.1");
        assert_eq!(
            Value::Map(vec![(Value::String("a".into()), Value::Int64(1))]).to_string(),
            "{a=1}"
        );
        assert_eq!(
            Value::Array(vec![Value::Int32(1), Value::Int32(2)]).to_string(),
            "[1, 2]"
        );
    }
}
