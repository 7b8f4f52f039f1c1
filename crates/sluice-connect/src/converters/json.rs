//! Kafka's `JsonConverter`: Connect data as JSON, by default inside the envelope
//! `{"schema":{...},"payload":...}` that carries the Connect schema with every record.
//!
//! The JSON is Kafka's byte for byte: the schema object's members in Kafka's order
//! (`type`, then `items` / `keys` and `values` / `fields`, `optional`, `name`, `version`,
//! `doc`, `parameters`, `default`, and `field` last in a struct's field), numbers as Java
//! and Jackson print them, bytes and (by default) decimals as base64. Reading accepts what
//! Kafka accepts and answers what Kafka answers, including Jackson's leniency: a JSON
//! number where a string is expected reads as null, a string where a number is expected
//! reads as 0.
//!
//! Settings (`JsonConverterConfig`): `schemas.enable` (default true), `schemas.cache.size`
//! (default 1000), `decimal.format` (`BASE64` or `NUMERIC`, any case), `replace.null.with.default`
//! (default true: a null with a default is written and read as the default), and
//! `schema.content` (KIP-1054: a schema for every record read, whose bytes are then the
//! bare payload; only with `schemas.enable`).
//!
//! Schemaless data (`schemas.enable=false`, or an envelope with `"schema": null`) reads
//! with the types JSON implies: integers as `Int64`, other numbers as `Float64`, objects
//! as maps with string keys, arrays as arrays.
//!
//! Where the data model differs from Java's: a Connect Decimal is the bytes of its
//! unscaled value at the schema's scale (Java holds a `BigDecimal`), so a JSON number read
//! for a Decimal is brought to the schema's scale, and one that would lose digits is
//! refused with Connect's text for a decimal of the wrong scale. Date, Time and Timestamp
//! are their integers (days, milliseconds of the day, milliseconds).
//!
//! Cost: one pass over the bytes to read the tree and one over the tree to build the
//! value; the envelope's schema is converted once per distinct schema (a cache of
//! `schemas.cache.size` entries keyed by the schema's JSON), and when writing, a record
//! with the same schema as the previous one reuses its JSON schema.

use std::sync::{Arc, Mutex};

use super::decimal::{BigDecimal, BigInteger};
use super::jackson::{self, JsonNode};
use super::{BoundedCache, Converter, Settings, java_class, java_type_name, with_cause};
use crate::ConfigError;
use crate::data::{
    DATE, DECIMAL, DECIMAL_SCALE, DataError, Field, Schema, SchemaRef, Struct, TIME, TIMESTAMP,
    Type, Value,
};

pub const SCHEMAS_ENABLE_CONFIG: &str = "schemas.enable";
pub const SCHEMAS_CACHE_SIZE_CONFIG: &str = "schemas.cache.size";
pub const DECIMAL_FORMAT_CONFIG: &str = "decimal.format";
pub const REPLACE_NULL_WITH_DEFAULT_CONFIG: &str = "replace.null.with.default";
pub const SCHEMA_CONTENT_CONFIG: &str = "schema.content";

const ENVELOPE_SCHEMA: &str = "schema";
const ENVELOPE_PAYLOAD: &str = "payload";

/// Milliseconds in a day: the bound of a Connect Time.
const MILLIS_PER_DAY: i64 = 24 * 60 * 60 * 1000;

/// How the converter writes a Decimal (`decimal.format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DecimalFormat {
    /// The unscaled value's two's-complement bytes, base64 (`"AJw="` for 1.56).
    #[default]
    Base64,
    /// A JSON number (`1.56`).
    Numeric,
}

/// `JsonConverterConfig`.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonConverterConfig {
    pub schemas_enable: bool,
    pub schemas_cache_size: usize,
    pub decimal_format: DecimalFormat,
    pub replace_null_with_default: bool,
    /// `schema.content`: the JSON of a Connect schema.
    pub schema_content: Option<String>,
}

impl Default for JsonConverterConfig {
    fn default() -> JsonConverterConfig {
        JsonConverterConfig {
            schemas_enable: true,
            schemas_cache_size: 1000,
            decimal_format: DecimalFormat::Base64,
            replace_null_with_default: true,
            schema_content: None,
        }
    }
}

impl JsonConverterConfig {
    pub fn parse(settings: &Settings<'_>) -> Result<JsonConverterConfig, ConfigError> {
        let mut errors = ConfigError::default();
        let mut config = JsonConverterConfig::default();
        match settings.boolean(SCHEMAS_ENABLE_CONFIG, true) {
            Ok(v) => config.schemas_enable = v,
            Err(e) => errors.push(e),
        }
        match settings.int(SCHEMAS_CACHE_SIZE_CONFIG, 1000) {
            // A negative size caches nothing, as an LRU map of that size would.
            Ok(v) => config.schemas_cache_size = usize::try_from(v).unwrap_or(0),
            Err(e) => errors.push(e),
        }
        if let Some(format) = settings.string(DECIMAL_FORMAT_CONFIG) {
            if format.eq_ignore_ascii_case("BASE64") {
                config.decimal_format = DecimalFormat::Base64;
            } else if format.eq_ignore_ascii_case("NUMERIC") {
                config.decimal_format = DecimalFormat::Numeric;
            } else {
                errors.push(settings.invalid(
                    DECIMAL_FORMAT_CONFIG,
                    format,
                    "String must be one of (case insensitive): BASE64, NUMERIC",
                ));
            }
        }
        match settings.boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG, true) {
            Ok(v) => config.replace_null_with_default = v,
            Err(e) => errors.push(e),
        }
        config.schema_content = settings
            .string(SCHEMA_CONTENT_CONFIG)
            .filter(|content| !content.is_empty())
            .map(str::to_string);
        if !errors.is_empty() {
            return Err(errors);
        }
        // The schema is read once, when the converter is built, as Kafka reads it in
        // configure(); a bad one fails the converter there.
        if config.schemas_enable
            && let Some(content) = &config.schema_content
        {
            let converter = JsonConverter::unchecked(config.clone());
            if let Err(e) = converter.parse_schema_content(content) {
                return Err(ConfigError::new(settings.key(SCHEMA_CONTENT_CONFIG), e.0));
            }
        }
        Ok(config)
    }
}

/// Kafka's `JsonConverter`.
#[derive(Debug)]
pub struct JsonConverter {
    config: JsonConverterConfig,
    /// `schema.content`, read.
    fixed_schema: Option<SchemaRef>,
    /// JSON of an envelope's schema → that schema.
    to_connect_schemas: Mutex<BoundedCache<String, SchemaRef>>,
    /// The schema last written and its JSON.
    last_written_schema: Mutex<Option<(SchemaRef, Arc<Vec<u8>>)>>,
}

impl JsonConverter {
    pub fn new(config: JsonConverterConfig) -> Result<JsonConverter, ConfigError> {
        let mut converter = JsonConverter::unchecked(config);
        if converter.config.schemas_enable
            && let Some(content) = converter.config.schema_content.clone()
        {
            let schema = converter
                .parse_schema_content(&content)
                .map_err(|e| ConfigError::new(SCHEMA_CONTENT_CONFIG, e.0))?;
            converter.fixed_schema = schema;
        }
        Ok(converter)
    }

    fn unchecked(config: JsonConverterConfig) -> JsonConverter {
        let capacity = config.schemas_cache_size;
        JsonConverter {
            config,
            fixed_schema: None,
            to_connect_schemas: Mutex::new(BoundedCache::new(capacity)),
            last_written_schema: Mutex::new(None),
        }
    }

    fn parse_schema_content(&self, content: &str) -> Result<Option<SchemaRef>, DataError> {
        self.schema_from_json(content)
    }

    /// A Connect schema as the JSON text the envelope carries (`asJsonSchema`).
    pub fn schema_to_json(&self, schema: &Schema) -> Result<String, DataError> {
        Ok(jackson::write_string(&self.as_json_schema(schema)?))
    }

    /// The Connect schema a JSON schema text describes (`asConnectSchema`); none for
    /// `null`.
    pub fn schema_from_json(&self, json: &str) -> Result<Option<SchemaRef>, DataError> {
        let node = jackson::read_tree(json.as_bytes()).map_err(|e| {
            with_cause(
                "Converting byte[] to Kafka Connect data failed due to serialization error: ",
                e.0,
            )
        })?;
        self.as_connect_schema(&node)
    }

    /// `asJsonSchema`: a Connect schema as the JSON the envelope carries.
    pub(crate) fn as_json_schema(&self, schema: &Schema) -> Result<JsonNode, DataError> {
        let mut members = vec![("type".to_string(), text(schema.ty.name()))];
        match schema.ty {
            Type::Array => {
                members.push((
                    "items".into(),
                    self.optional_json_schema(&schema.value_schema)?,
                ));
            }
            Type::Map => {
                members.push((
                    "keys".into(),
                    self.optional_json_schema(&schema.key_schema)?,
                ));
                members.push((
                    "values".into(),
                    self.optional_json_schema(&schema.value_schema)?,
                ));
            }
            Type::Struct => {
                let fields = schema
                    .fields
                    .iter()
                    .map(|field| {
                        let JsonNode::Object(mut members) = self.as_json_schema(&field.schema)?
                        else {
                            unreachable!("a schema's JSON is an object")
                        };
                        members.push(("field".into(), text(&field.name)));
                        Ok(JsonNode::Object(members))
                    })
                    .collect::<Result<Vec<_>, DataError>>()?;
                members.push(("fields".into(), JsonNode::Array(fields)));
            }
            _ => {}
        }
        members.push(("optional".into(), JsonNode::Boolean(schema.optional)));
        if let Some(name) = &schema.name {
            members.push(("name".into(), text(name)));
        }
        if let Some(version) = schema.version {
            members.push(("version".into(), JsonNode::Int(version)));
        }
        if let Some(doc) = &schema.doc {
            members.push(("doc".into(), text(doc)));
        }
        // Java keeps no parameter map until one is set; an empty map is the same here.
        if !schema.parameters.is_empty() {
            let parameters = schema
                .parameters
                .iter()
                .map(|(k, v)| (k.clone(), text(v)))
                .collect();
            members.push(("parameters".into(), JsonNode::Object(parameters)));
        }
        if let Some(default) = default_of(schema) {
            members.push((
                "default".into(),
                self.convert_to_json(Some(schema), default)?,
            ));
        }
        Ok(JsonNode::Object(members))
    }

    fn optional_json_schema(&self, schema: &Option<SchemaRef>) -> Result<JsonNode, DataError> {
        match schema {
            Some(schema) => self.as_json_schema(schema),
            None => Ok(JsonNode::Null),
        }
    }

    /// The envelope's schema for `schema` as written JSON, from the previous record's
    /// when it is the same schema (a source's records of one table share theirs: the
    /// text is written once, not rebuilt and copied per record).
    fn envelope_schema(&self, schema: &SchemaRef) -> Result<Arc<Vec<u8>>, DataError> {
        let mut last = self
            .last_written_schema
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((cached, json)) = &*last
            && Arc::ptr_eq(cached, schema)
        {
            return Ok(Arc::clone(json));
        }
        let json = Arc::new(jackson::write_bytes(&self.as_json_schema(schema)?));
        *last = Some((Arc::clone(schema), Arc::clone(&json)));
        Ok(json)
    }

    /// `convertToJson`: a Connect value as JSON, against its schema when it has one.
    fn convert_to_json(
        &self,
        schema: Option<&Schema>,
        value: &Value,
    ) -> Result<JsonNode, DataError> {
        if value.is_null() {
            let Some(schema) = schema else {
                return Ok(JsonNode::Null);
            };
            if let Some(default) = default_of(schema)
                && self.config.replace_null_with_default
            {
                return self.convert_to_json(Some(schema), default);
            }
            if schema.optional {
                return Ok(JsonNode::Null);
            }
            return Err(DataError(
                "Conversion error: null value for field that is required and has no default value"
                    .into(),
            ));
        }
        if let Some(schema) = schema
            && let Some(name) = schema.name.as_deref()
            && let Some(json) = logical_to_json(schema, name, value, self.config.decimal_format)?
        {
            return Ok(json);
        }
        let ty = match schema {
            Some(schema) => schema.ty,
            None => schemaless_type(value),
        };
        let mismatch = || {
            let type_name = schema.map_or("unknown schema", |s| java_type_name(s.ty));
            DataError(format!(
                "Invalid type for {type_name}: {}",
                java_class(value)
            ))
        };
        Ok(match (ty, value) {
            (Type::Int8, Value::Int8(v)) => JsonNode::Int(i32::from(*v)),
            (Type::Int16, Value::Int16(v)) => JsonNode::Int(i32::from(*v)),
            (Type::Int32, Value::Int32(v)) => JsonNode::Int(*v),
            (Type::Int64, Value::Int64(v)) => JsonNode::Long(*v),
            (Type::Float32, Value::Float32(v)) => JsonNode::Float(*v),
            (Type::Float64, Value::Float64(v)) => JsonNode::Double(*v),
            (Type::Boolean, Value::Boolean(v)) => JsonNode::Boolean(*v),
            (Type::String, Value::String(v)) => JsonNode::Text(v.clone()),
            (Type::Bytes, Value::Bytes(v)) => JsonNode::Binary(v.clone()),
            (Type::Bytes, other) => {
                return Err(DataError(format!(
                    "Invalid type for bytes type: {}",
                    java_class(other)
                )));
            }
            (Type::Array, Value::Array(items)) => {
                let element = schema.and_then(|s| s.value_schema.as_deref());
                JsonNode::Array(
                    items
                        .iter()
                        .map(|item| self.convert_to_json(element, item))
                        .collect::<Result<_, _>>()?,
                )
            }
            (Type::Map, Value::Map(entries)) => self.map_to_json(schema, entries)?,
            (Type::Struct, Value::Struct(s)) => {
                let Some(schema) = schema.filter(|schema| *s.schema == **schema) else {
                    return Err(DataError("Mismatching schema.".into()));
                };
                let members = schema
                    .fields
                    .iter()
                    .map(|field| {
                        let raw = &s.values[field.index];
                        Ok((
                            field.name.clone(),
                            self.convert_to_json(Some(&field.schema), raw)?,
                        ))
                    })
                    .collect::<Result<Vec<_>, DataError>>()?;
                JsonNode::Object(members)
            }
            _ => return Err(mismatch()),
        })
    }

    /// A map: a JSON object when its keys are strings (or, without a schema, all keys
    /// are strings), otherwise an array of `[key, value]` pairs.
    fn map_to_json(
        &self,
        schema: Option<&Schema>,
        entries: &[(Value, Value)],
    ) -> Result<JsonNode, DataError> {
        let key_schema = schema.and_then(|s| s.key_schema.as_deref());
        let value_schema = schema.and_then(|s| s.value_schema.as_deref());
        let object_mode = match schema {
            None => entries.iter().all(|(k, _)| matches!(k, Value::String(_))),
            Some(_) => key_schema.is_some_and(|k| k.ty == Type::String),
        };
        if object_mode {
            let mut members = Vec::with_capacity(entries.len());
            for (key, value) in entries {
                let key = as_text(&self.convert_to_json(key_schema, key)?);
                members.push((key, self.convert_to_json(value_schema, value)?));
            }
            return Ok(JsonNode::Object(dedupe_members(members)));
        }
        let pairs = entries
            .iter()
            .map(|(key, value)| {
                Ok(JsonNode::Array(vec![
                    self.convert_to_json(key_schema, key)?,
                    self.convert_to_json(value_schema, value)?,
                ]))
            })
            .collect::<Result<_, DataError>>()?;
        Ok(JsonNode::Array(pairs))
    }

    /// `asConnectSchema`: the envelope's schema JSON as a Connect schema; none for JSON
    /// null.
    pub(crate) fn as_connect_schema(
        &self,
        node: &JsonNode,
    ) -> Result<Option<SchemaRef>, DataError> {
        if node.is_null() {
            return Ok(None);
        }
        let key = jackson::write_string(node);
        if let Some(schema) = self.cache().get(&key) {
            return Ok(Some(schema));
        }
        let schema: SchemaRef = Arc::new(self.build_connect_schema(node)?);
        self.cache().insert(key, Arc::clone(&schema));
        Ok(Some(schema))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, BoundedCache<String, SchemaRef>> {
        // Entries are whole values: a panic elsewhere cannot leave one half-written.
        self.to_connect_schemas
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn build_connect_schema(&self, node: &JsonNode) -> Result<Schema, DataError> {
        let Some(type_name) = node.get("type").and_then(JsonNode::text_value) else {
            return Err(DataError("Schema must contain 'type' field".into()));
        };
        let mut schema = match type_name {
            "array" => {
                let items = node
                    .get("items")
                    .filter(|items| !items.is_null())
                    .ok_or_else(|| {
                        DataError("Array schema did not specify the element type".into())
                    })?;
                let element = self.nested_schema(items)?;
                Schema::array(
                    element.ok_or_else(|| DataError("valueSchema cannot be null.".into()))?,
                )
            }
            "map" => {
                let keys = node
                    .get("keys")
                    .ok_or_else(|| DataError("Map schema did not specify the key type".into()))?;
                let values = node
                    .get("values")
                    .ok_or_else(|| DataError("Map schema did not specify the value type".into()))?;
                let keys = self.nested_schema(keys)?;
                let values = self.nested_schema(values)?;
                let keys = keys.ok_or_else(|| DataError("keySchema cannot be null.".into()))?;
                let values =
                    values.ok_or_else(|| DataError("valueSchema cannot be null.".into()))?;
                Schema::map(keys, values)
            }
            "struct" => {
                let Some(JsonNode::Array(fields)) = node.get("fields") else {
                    return Err(DataError(
                        "Struct schema's \"fields\" argument is not an array.".into(),
                    ));
                };
                let mut schema = Schema::new(Type::Struct);
                for field in fields {
                    let Some(name) = field.get("field").and_then(JsonNode::text_value) else {
                        return Err(DataError(
                            "Struct schema's field name not specified properly".into(),
                        ));
                    };
                    let field_schema = self
                        .nested_schema(field)?
                        .expect("a field with a name is an object, not null");
                    if schema.get_field(name).is_some() {
                        return Err(DataError(format!(
                            "Cannot create field because of field name duplication {name}"
                        )));
                    }
                    schema.fields.push(Field {
                        name: name.to_string(),
                        index: schema.fields.len(),
                        schema: field_schema,
                    });
                }
                schema
            }
            other => match Type::from_name(other) {
                Some(ty) if ty.is_primitive() => Schema::new(ty),
                _ => return Err(DataError(format!("Unknown schema type: {other}"))),
            },
        };
        schema.optional = matches!(node.get("optional"), Some(JsonNode::Boolean(true)));
        if let Some(name) = node.get("name").and_then(JsonNode::text_value) {
            schema.name = Some(name.to_string());
        }
        if let Some(version) = node.get("version").filter(|v| v.is_integral_number()) {
            schema.version = Some(version.int_value());
        }
        if let Some(doc) = node.get("doc").and_then(JsonNode::text_value) {
            schema.doc = Some(doc.to_string());
        }
        if let Some(JsonNode::Object(parameters)) = node.get("parameters") {
            for (key, value) in parameters {
                let Some(value) = value.text_value() else {
                    return Err(DataError(
                        "Schema parameters must have string values.".into(),
                    ));
                };
                schema.parameters.insert(key.clone(), value.to_string());
            }
        }
        if let Some(default) = node.get("default") {
            // The default is read against the schema built so far, as Kafka reads it
            // against its SchemaBuilder.
            let so_far: SchemaRef = Arc::new(schema.clone());
            let value = self.convert_to_connect(Some(&so_far), Some(default))?;
            if !value.is_null() {
                check_default(&schema, &value)?;
                schema.default = Some(value);
            }
        }
        Ok(schema)
    }

    fn nested_schema(&self, node: &JsonNode) -> Result<Option<SchemaRef>, DataError> {
        if node.is_null() {
            return Ok(None);
        }
        Ok(Some(Arc::new(self.build_connect_schema(node)?)))
    }

    /// `convertToConnect`: JSON (none for a member that is not there) as a Connect value,
    /// against a schema or, without one, by the JSON's own types.
    fn convert_to_connect(
        &self,
        schema: Option<&SchemaRef>,
        node: Option<&JsonNode>,
    ) -> Result<Value, DataError> {
        let ty = match schema {
            Some(schema) => {
                if node.is_none_or(JsonNode::is_null) {
                    if let Some(default) = default_of(schema)
                        && self.config.replace_null_with_default
                    {
                        return Ok(default.clone());
                    }
                    if schema.optional {
                        return Ok(Value::Null);
                    }
                    return Err(DataError(format!(
                        "Invalid null value for required {} field",
                        java_type_name(schema.ty)
                    )));
                }
                schema.ty
            }
            None => match node {
                None | Some(JsonNode::Null | JsonNode::Missing) => return Ok(Value::Null),
                Some(JsonNode::Boolean(_)) => Type::Boolean,
                Some(n) if n.is_integral_number() => Type::Int64,
                Some(n) if n.is_number() => Type::Float64,
                Some(JsonNode::Array(_)) => Type::Array,
                Some(JsonNode::Object(_)) => Type::Map,
                Some(JsonNode::Text(_)) => Type::String,
                Some(_) => return Err(DataError("Unknown schema type: null".into())),
            },
        };
        let node = node.expect("a missing member was handled above");
        if let Some(schema) = schema
            && let Some(name) = schema.name.as_deref()
            && let Some(value) = logical_to_connect(schema, name, node)?
        {
            return Ok(value);
        }
        Ok(match ty {
            Type::Boolean => Value::Boolean(node.boolean_value()),
            // Java's (byte) and (short) of intValue(): the low bits.
            Type::Int8 => Value::Int8(node.int_value() as i8),
            Type::Int16 => Value::Int16(node.int_value() as i16),
            Type::Int32 => Value::Int32(node.int_value()),
            Type::Int64 => Value::Int64(node.long_value()),
            Type::Float32 => Value::Float32(node.float_value()),
            Type::Float64 => Value::Float64(node.double_value()),
            Type::Bytes => match node.binary_value() {
                Ok(Some(bytes)) => Value::Bytes(bytes),
                Ok(None) => Value::Null,
                Err(e) => return Err(with_cause("Invalid bytes field", e)),
            },
            Type::String => node
                .text_value()
                .map_or(Value::Null, |t| Value::String(t.to_string())),
            Type::Array => {
                let element = schema.and_then(|s| s.value_schema.as_ref());
                Value::Array(
                    node.elements()
                        .into_iter()
                        .map(|e| self.convert_to_connect(element, Some(e)))
                        .collect::<Result<_, _>>()?,
                )
            }
            Type::Map => self.map_to_connect(schema, node)?,
            Type::Struct => {
                let schema = schema.expect("schemaless JSON never reads as a struct");
                let JsonNode::Object(members) = node else {
                    return Err(DataError(format!(
                        "Structs should be encoded as JSON objects, but found {}",
                        node.node_type()
                    )));
                };
                let mut result = Struct::new(Arc::clone(schema));
                for field in &schema.fields {
                    let member = members
                        .iter()
                        .find(|(name, _)| *name == field.name)
                        .map(|(_, v)| v);
                    let value = self.convert_to_connect(Some(&field.schema), member)?;
                    result.put(&field.name, value)?;
                }
                Value::Struct(result)
            }
        })
    }

    fn map_to_connect(
        &self,
        schema: Option<&SchemaRef>,
        node: &JsonNode,
    ) -> Result<Value, DataError> {
        let key_schema = schema.and_then(|s| s.key_schema.as_ref());
        let value_schema = schema.and_then(|s| s.value_schema.as_ref());
        if schema.is_none() || key_schema.is_some_and(|k| k.ty == Type::String) {
            let JsonNode::Object(members) = node else {
                return Err(DataError(format!(
                    "Maps with string fields should be encoded as JSON objects, but found {}",
                    node.node_type()
                )));
            };
            let entries = members
                .iter()
                .map(|(name, value)| {
                    Ok((
                        Value::String(name.clone()),
                        self.convert_to_connect(value_schema, Some(value))?,
                    ))
                })
                .collect::<Result<_, DataError>>()?;
            return Ok(Value::Map(entries));
        }
        let JsonNode::Array(pairs) = node else {
            return Err(DataError(format!(
                "Maps with non-string fields should be encoded as JSON array of tuples, but found {}",
                node.node_type()
            )));
        };
        let mut entries: Vec<(Value, Value)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            let JsonNode::Array(pair) = pair else {
                return Err(DataError(format!(
                    "Found invalid map entry instead of array tuple: {}",
                    pair.node_type()
                )));
            };
            if pair.len() != 2 {
                return Err(DataError(format!(
                    "Found invalid map entry, expected length 2 but found :{}",
                    pair.len()
                )));
            }
            let key = self.convert_to_connect(key_schema, Some(&pair[0]))?;
            let value = self.convert_to_connect(value_schema, Some(&pair[1]))?;
            // A repeated key replaces the value, as a put into Java's map does.
            match entries.iter_mut().find(|(k, _)| *k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
        }
        Ok(Value::Map(entries))
    }
}

impl Converter for JsonConverter {
    fn from_connect(
        &self,
        _topic: &str,
        schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        if schema.is_none() && value.is_null() {
            return Ok(None);
        }
        let payload = self.convert_to_json(schema.map(|s| &**s), value)?;
        let bytes = if self.config.schemas_enable {
            // `{"schema":...,"payload":...}`, as Jackson writes the envelope object.
            let schema = match schema {
                Some(schema) => self.envelope_schema(schema)?,
                None => Arc::new(b"null".to_vec()),
            };
            let payload = jackson::write_bytes(&payload);
            let mut out = Vec::with_capacity(schema.len() + payload.len() + 24);
            out.extend_from_slice(b"{\"");
            out.extend_from_slice(ENVELOPE_SCHEMA.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(&schema);
            out.extend_from_slice(b",\"");
            out.extend_from_slice(ENVELOPE_PAYLOAD.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(&payload);
            out.push(b'}');
            out
        } else {
            jackson::write_bytes(&payload)
        };
        Ok(Some(bytes))
    }

    fn to_connect(
        &self,
        _topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        // A tombstone.
        let Some(bytes) = bytes else {
            return Ok((None, Value::Null));
        };
        let node = jackson::read_tree(bytes).map_err(|e| {
            with_cause(
                "Converting byte[] to Kafka Connect data failed due to serialization error: ",
                e.0,
            )
        })?;
        if !self.config.schemas_enable {
            return Ok((None, self.convert_to_connect(None, Some(&node))?));
        }
        if let Some(schema) = &self.fixed_schema {
            let value = self.convert_to_connect(Some(schema), Some(&node))?;
            return Ok((Some(Arc::clone(schema)), value));
        }
        let (Some(schema), Some(payload)) = (node.get(ENVELOPE_SCHEMA), node.get(ENVELOPE_PAYLOAD))
        else {
            return Err(envelope_required());
        };
        if node.size() != 2 {
            return Err(envelope_required());
        }
        let schema = self.as_connect_schema(schema)?;
        let value = self.convert_to_connect(schema.as_ref(), Some(payload))?;
        Ok((schema, value))
    }
}

fn envelope_required() -> DataError {
    DataError(
        "JsonConverter with schemas.enable requires \"schema\" and \"payload\" fields and may \
         not contain additional fields. If you are trying to deserialize plain JSON data, set \
         schemas.enable=false in your converter configuration."
            .into(),
    )
}

fn text(s: &str) -> JsonNode {
    JsonNode::Text(s.to_string())
}

/// A schema's default; a default of null is no default.
fn default_of(schema: &Schema) -> Option<&Value> {
    schema.default.as_ref().filter(|d| !d.is_null())
}

/// `JsonNode.asText()` of a map key's JSON.
fn as_text(node: &JsonNode) -> String {
    match node {
        JsonNode::Text(t) => t.clone(),
        JsonNode::Null => "null".into(),
        JsonNode::Missing => String::new(),
        other => jackson::write_string(other),
    }
}

/// Members with repeated names merged: first position, last value (`ObjectNode.set`).
fn dedupe_members(members: Vec<(String, JsonNode)>) -> Vec<(String, JsonNode)> {
    let mut positions = std::collections::HashMap::with_capacity(members.len());
    let mut result: Vec<(String, JsonNode)> = Vec::with_capacity(members.len());
    for (name, value) in members {
        match positions.get(&name) {
            Some(&at) => result[at] = (name, value),
            None => {
                positions.insert(name.clone(), result.len());
                result.push((name, value));
            }
        }
    }
    result
}

/// The type Connect infers for a value without a schema (`ConnectSchema.schemaType`).
fn schemaless_type(value: &Value) -> Type {
    match value {
        Value::Int8(_) => Type::Int8,
        Value::Int16(_) => Type::Int16,
        Value::Int32(_) => Type::Int32,
        Value::Int64(_) => Type::Int64,
        Value::Float32(_) => Type::Float32,
        Value::Float64(_) => Type::Float64,
        Value::Boolean(_) => Type::Boolean,
        Value::String(_) => Type::String,
        Value::Bytes(_) => Type::Bytes,
        Value::Array(_) => Type::Array,
        Value::Map(_) => Type::Map,
        // A null never gets here: it is written before its type matters.
        Value::Struct(_) | Value::Null => Type::Struct,
    }
}

fn expected_date(logical: &str, value: &Value) -> DataError {
    DataError(format!(
        "Invalid type for {logical}, expected Date but was {}",
        java_class(value)
    ))
}

/// `Decimal.scale(schema)`.
pub(crate) fn decimal_scale(schema: &Schema) -> Result<i32, DataError> {
    let Some(scale) = schema.parameters.get(DECIMAL_SCALE) else {
        return Err(DataError(
            "Invalid Decimal schema: scale parameter not found.".into(),
        ));
    };
    scale.parse().map_err(|_| {
        with_cause(
            "Invalid scale parameter found in Decimal schema: ",
            format_args!("For input string: \"{scale}\""),
        )
    })
}

/// Kafka's logical converters, Connect to JSON: Decimal, Date, Time and Timestamp by
/// their schema's name; none for other names. Confluent's `JsonSchemaData` writes them the
/// same way.
pub(crate) fn logical_to_json(
    schema: &Schema,
    name: &str,
    value: &Value,
    decimal_format: DecimalFormat,
) -> Result<Option<JsonNode>, DataError> {
    Ok(Some(match name {
        DECIMAL => {
            let Value::Bytes(bytes) = value else {
                return Err(DataError(format!(
                    "Invalid type for Decimal, expected BigDecimal but was {}",
                    java_class(value)
                )));
            };
            let scale = decimal_scale(schema)?;
            let unscaled = BigInteger::from_twos_complement(bytes)
                .ok_or_else(|| DataError("Zero length BigInteger".into()))?;
            match decimal_format {
                DecimalFormat::Base64 => JsonNode::Binary(unscaled.to_twos_complement()),
                DecimalFormat::Numeric => JsonNode::Decimal(BigDecimal::new(unscaled, scale)),
            }
        }
        DATE => match value {
            Value::Int32(days) => JsonNode::Int(*days),
            other => return Err(expected_date("Date", other)),
        },
        TIME => match value {
            Value::Int32(millis) => {
                if *millis < 0 || i64::from(*millis) > MILLIS_PER_DAY {
                    return Err(DataError(
                        "Kafka Connect Time type should not have any date fields set to \
                         non-zero values."
                            .into(),
                    ));
                }
                JsonNode::Int(*millis)
            }
            other => return Err(expected_date("Time", other)),
        },
        TIMESTAMP => match value {
            Value::Int64(millis) => JsonNode::Long(*millis),
            other => return Err(expected_date("Timestamp", other)),
        },
        _ => return Ok(None),
    }))
}

/// Kafka's logical converters, JSON to Connect; none for other names (Confluent's
/// `JsonSchemaData` reads them the same way, with the same texts).
pub(crate) fn logical_to_connect(
    schema: &Schema,
    name: &str,
    node: &JsonNode,
) -> Result<Option<Value>, DataError> {
    Ok(Some(match name {
        DECIMAL => {
            if node.is_number() {
                let scale = decimal_scale(schema)?;
                let number = node
                    .decimal_value()
                    .expect("a number node has a decimal value");
                let rescaled = number.rescale(scale).ok_or_else(|| {
                    DataError(format!(
                        "Decimal value has mismatching scale for given Decimal schema. Schema has \
                         scale {scale}, value has scale {}.",
                        number.scale
                    ))
                })?;
                Value::Bytes(rescaled.unscaled.to_twos_complement())
            } else if matches!(node, JsonNode::Text(_) | JsonNode::Binary(_)) {
                let bytes = node
                    .binary_value()
                    .map_err(|e| with_cause("Invalid bytes for Decimal field", e))?
                    .unwrap_or_default();
                let unscaled = BigInteger::from_twos_complement(&bytes).ok_or_else(|| {
                    with_cause("Invalid bytes for Decimal field", "Zero length BigInteger")
                })?;
                decimal_scale(schema)
                    .map_err(|e| with_cause("Invalid bytes for Decimal field", e))?;
                Value::Bytes(unscaled.to_twos_complement())
            } else {
                return Err(DataError(format!(
                    "Invalid type for Decimal, underlying representation should be numeric or \
                     bytes but was {}",
                    node.node_type()
                )));
            }
        }
        DATE => {
            if !node.is_int() {
                return Err(DataError(format!(
                    "Invalid type for Date, underlying representation should be integer but was {}",
                    node.node_type()
                )));
            }
            Value::Int32(node.int_value())
        }
        TIME => {
            if !node.is_int() {
                return Err(DataError(format!(
                    "Invalid type for Time, underlying representation should be integer but was {}",
                    node.node_type()
                )));
            }
            let millis = node.int_value();
            if millis < 0 || i64::from(millis) > MILLIS_PER_DAY {
                return Err(DataError(
                    "Time values must use number of milliseconds greater than 0 and less than \
                     86400000"
                        .into(),
                ));
            }
            Value::Int32(millis)
        }
        TIMESTAMP => {
            if !node.is_integral_number() {
                return Err(DataError(format!(
                    "Invalid type for Timestamp, underlying representation should be integral but \
                     was {}",
                    node.node_type()
                )));
            }
            Value::Int64(node.long_value())
        }
        _ => return Ok(None),
    }))
}

/// `SchemaBuilder.defaultValue`'s check. Kafka checks the default against the builder
/// itself, and a struct's schema never equals a builder, so Kafka refuses every struct
/// default it reads from JSON; so does this.
fn check_default(schema: &Schema, value: &Value) -> Result<(), DataError> {
    let refused = |cause: DataError| with_cause("Invalid default value", cause);
    if schema.ty == Type::Struct {
        return Err(refused(DataError("Struct schemas do not match.".into())));
    }
    schema.validate(value).map_err(refused)
}

#[cfg(test)]
mod tests;
