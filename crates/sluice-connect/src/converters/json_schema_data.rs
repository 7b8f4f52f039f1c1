//! Confluent's `JsonSchemaData`: Connect schemas to and from JSON Schema, and Connect data
//! to and from the JSON values those schemas describe. The registry-free half of the JSON
//! Schema converter ([`super::JsonSchemaConverter`]).
//!
//! Connect → JSON Schema writes what Confluent's converter registers, key for key and in
//! the same order: Confluent builds an everit schema and prints it, so the order is
//! everit's printer's (`type` first, except for `boolean`; then `title`, `description`,
//! `default`, the `connect.*` keywords; then `items`, `additionalProperties` or
//! `properties`), and where everit keeps a `java.util.HashMap` — an object's
//! `properties`, the `connect.*` keywords, `connect.parameters` — the order is that map's
//! iteration order, which [`java_hash_map_order`] reproduces. Connect's `int8`..`int64`,
//! `float32`, `float64` and `bytes` are `integer`, `number` and `string` with a
//! `connect.type`; a field's position is `connect.index`; an optional schema is
//! `oneOf: [null, schema]`; a map with string keys is an object with
//! `additionalProperties`, any other map an array of `{key, value}` objects.
//!
//! JSON Schema → Connect reads both those schemas (back to the same Connect schema) and
//! schemas written by others: `integer` is INT64, `number` FLOAT64, an object with
//! `properties` a struct (fields in the order Confluent's converter gives them: by
//! `connect.index`, else in the `HashMap` order of the property names), `oneOf`/`anyOf`
//! of `null` and one schema an optional schema, a list of types (`["string", "null"]`)
//! as everit reads it (an `anyOf`), `enum`/`const` a string with Confluent's enum
//! parameters, other `oneOf`/`anyOf` a `io.confluent.connect.json.OneOf` struct, `allOf`
//! (and keywords everit splits into a synthetic `allOf`, such as `type` beside `const`)
//! a struct of every property its members declare or the one member Confluent picks, and
//! `$ref` to a JSON pointer within the document (`#/definitions/...`, `#/$defs/...`).
//!
//! What it is not: references to other registered schemas, recursive schemas (Connect
//! schemas here are immutable trees), `{}` (Confluent's Variant), `not` and
//! `if`/`then`/`else`, `generalized.sum.type.support` and `preserve.additional.properties`
//! (refused when configured; see [`JsonSchemaDataConfig`]).
//!
//! Limits: schemas are read at most [`SCHEMA_DEPTH_MAX`] deep, `$ref`s followed included,
//! so a schema referring to itself is refused rather than followed forever and no
//! document exhausts the stack; JSON nesting is bounded by the Jackson reader
//! ([`super::jackson::NESTING_DEPTH_MAX`]). Data follows its schema, so it nests no deeper.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::Settings;
use super::jackson::{self, JsonNode};
use super::json::{DecimalFormat, logical_to_connect, logical_to_json};
use super::{java_class, java_type_name, with_cause};
use crate::ConfigError;
use crate::data::{DECIMAL, DataError, Schema, SchemaRef, Struct, Type, Value};

pub const OBJECT_ADDITIONAL_PROPERTIES_CONFIG: &str = "object.additional.properties";
pub const USE_OPTIONAL_FOR_NON_REQUIRED_CONFIG: &str = "use.optional.for.nonrequired";
pub const IGNORE_MODERN_DIALECTS_CONFIG: &str = "ignore.modern.dialects";
pub const DECIMAL_FORMAT_CONFIG: &str = "decimal.format";
pub const FLATTEN_SINGLETON_UNIONS_CONFIG: &str = "flatten.singleton.unions";
pub const PRESERVE_ADDITIONAL_PROPERTIES_CONFIG: &str = "preserve.additional.properties";
pub const GENERALIZED_SUM_TYPE_SUPPORT_CONFIG: &str = "generalized.sum.type.support";
pub const IGNORE_DEFAULT_FOR_NULLABLES_CONFIG: &str = "ignore.default.for.nullables";
pub const SCHEMAS_CACHE_SIZE_CONFIG: &str = "schemas.cache.config";

/// Confluent's namespace: parameters under it are the converter's own and are not
/// written to `connect.parameters`.
const NAMESPACE: &str = "io.confluent.connect.json";
/// The name of the struct a `oneOf`/`anyOf` union reads as.
pub const JSON_TYPE_ONE_OF: &str = "io.confluent.connect.json.OneOf";
/// The parameter marking a string schema as a JSON `enum`.
pub const JSON_TYPE_ENUM: &str = "io.confluent.connect.json.Enum";
/// `enum`'s null symbol, as a parameter name.
const NULL_MARKER: &str = "<NULL>";

const CONNECT_TYPE: &str = "connect.type";
const CONNECT_VERSION: &str = "connect.version";
const CONNECT_PARAMETERS: &str = "connect.parameters";
const CONNECT_INDEX: &str = "connect.index";
/// The entry fields of a map with non-string keys.
const KEY_FIELD: &str = "key";
const VALUE_FIELD: &str = "value";

/// How deep schemas nest when read, `$ref`s followed included: a self-referring schema
/// hits it, and so does a document nested deep enough to exhaust a thread's stack
/// (each level is a few recursive calls).
pub const SCHEMA_DEPTH_MAX: usize = 128;

/// `JsonSchemaDataConfig`'s settings (with `AbstractDataConfig`'s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSchemaDataConfig {
    /// `object.additional.properties` (default true): false writes
    /// `"additionalProperties": false` on every struct's object schema.
    pub object_additional_properties: bool,
    /// `use.optional.for.nonrequired` (default false): a property not in `required` reads
    /// as an optional field.
    pub use_optional_for_nonrequired: bool,
    pub decimal_format: DecimalFormat,
    /// `flatten.singleton.unions` (default true): a `oneOf` of one schema reads as it.
    pub flatten_singleton_unions: bool,
    /// `ignore.default.for.nullables` (default false): a null optional value is written as
    /// null even when its schema has a default.
    pub ignore_default_for_nullables: bool,
    /// `schemas.cache.config` (default 1000): how many Connect schemas read from the
    /// registry are kept.
    pub schemas_cache_size: usize,
}

impl Default for JsonSchemaDataConfig {
    fn default() -> JsonSchemaDataConfig {
        JsonSchemaDataConfig {
            object_additional_properties: true,
            use_optional_for_nonrequired: false,
            decimal_format: DecimalFormat::Base64,
            flatten_singleton_unions: true,
            ignore_default_for_nullables: false,
            schemas_cache_size: 1000,
        }
    }
}

impl JsonSchemaDataConfig {
    /// Reads the settings; the ones whose non-default behaviour is not implemented here
    /// (`generalized.sum.type.support`, `preserve.additional.properties`) are refused when
    /// set to true, each with its own error, rather than silently ignored.
    pub fn parse(settings: &Settings<'_>) -> Result<JsonSchemaDataConfig, ConfigError> {
        let mut errors = ConfigError::default();
        let mut config = JsonSchemaDataConfig::default();
        let mut boolean = |name: &str, default: bool| match settings.boolean(name, default) {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                default
            }
        };
        config.object_additional_properties = boolean(OBJECT_ADDITIONAL_PROPERTIES_CONFIG, true);
        config.use_optional_for_nonrequired = boolean(USE_OPTIONAL_FOR_NON_REQUIRED_CONFIG, false);
        config.flatten_singleton_unions = boolean(FLATTEN_SINGLETON_UNIONS_CONFIG, true);
        config.ignore_default_for_nullables = boolean(IGNORE_DEFAULT_FOR_NULLABLES_CONFIG, false);
        // Every dialect is read the same way here, so either answer behaves as draft 7.
        boolean(IGNORE_MODERN_DIALECTS_CONFIG, false);
        let generalized = boolean(GENERALIZED_SUM_TYPE_SUPPORT_CONFIG, false);
        let preserve = boolean(PRESERVE_ADDITIONAL_PROPERTIES_CONFIG, false);
        for (name, set) in [
            (GENERALIZED_SUM_TYPE_SUPPORT_CONFIG, generalized),
            (PRESERVE_ADDITIONAL_PROPERTIES_CONFIG, preserve),
        ] {
            if set {
                errors.push(settings.invalid(
                    name,
                    "true",
                    "not supported by this JSON Schema converter; only false is",
                ));
            }
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
        match settings.int(SCHEMAS_CACHE_SIZE_CONFIG, 1000) {
            Ok(v) => config.schemas_cache_size = usize::try_from(v).unwrap_or(0),
            Err(e) => errors.push(e),
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }
}

/// Confluent's `JsonSchemaData`.
#[derive(Debug, Clone, Default)]
pub struct JsonSchemaData {
    config: JsonSchemaDataConfig,
}

#[allow(clippy::wrong_self_convention)] // Confluent's method names, kept on purpose.
impl JsonSchemaData {
    pub fn new(config: JsonSchemaDataConfig) -> JsonSchemaData {
        JsonSchemaData { config }
    }

    /// The JSON Schema text Confluent's converter registers for `schema`.
    pub fn schema_text(&self, schema: &Schema) -> Result<String, DataError> {
        Ok(jackson::write_string(&self.from_connect_schema(schema)?))
    }

    /// `fromConnectSchema`, as the JSON tree Confluent prints.
    pub(crate) fn from_connect_schema(&self, schema: &Schema) -> Result<JsonNode, DataError> {
        Ok(self.generate(schema, None, false)?.into_node())
    }

    fn generate(
        &self,
        schema: &Schema,
        index: Option<usize>,
        ignore_optional: bool,
    ) -> Result<Generated, DataError> {
        let mut keywords: Vec<(String, JsonNode)> = Vec::new();
        let connect_type = |name: &str| (CONNECT_TYPE.to_string(), JsonNode::Text(name.into()));
        let kind = match schema.ty {
            Type::Int8 | Type::Int16 | Type::Int32 | Type::Int64 => {
                keywords.push(connect_type(schema.ty.name()));
                Kind::Integer
            }
            Type::Float32 => {
                keywords.push(connect_type("float32"));
                Kind::Number
            }
            Type::Float64 => {
                keywords.push(connect_type("float64"));
                Kind::Number
            }
            Type::Boolean => Kind::Boolean,
            Type::String if schema.parameters.contains_key(JSON_TYPE_ENUM) => {
                let prefix = format!("{JSON_TYPE_ENUM}.");
                let symbols = schema
                    .parameters
                    .keys()
                    .filter_map(|key| key.strip_prefix(&prefix))
                    .map(|symbol| match symbol {
                        NULL_MARKER => JsonNode::Null,
                        symbol => JsonNode::Text(symbol.into()),
                    })
                    .collect();
                Kind::Enum(symbols)
            }
            Type::String => Kind::String,
            Type::Bytes => {
                keywords.push(connect_type("bytes"));
                if schema.name.as_deref() == Some(DECIMAL)
                    && self.config.decimal_format == DecimalFormat::Numeric
                {
                    Kind::Number
                } else {
                    Kind::String
                }
            }
            Type::Array => {
                let element = element_schema(schema)?;
                Kind::Array(Box::new(self.generate(element, None, false)?))
            }
            Type::Map => {
                let (key, value) = map_schemas(schema)?;
                keywords.push(connect_type("map"));
                if key.ty == Type::String && !key.optional {
                    Kind::Map(Box::new(self.generate(value, None, false)?))
                } else {
                    let entry = Generated::new(Kind::Object {
                        properties: vec![
                            (KEY_FIELD.into(), self.generate(key, Some(0), false)?),
                            (VALUE_FIELD.into(), self.generate(value, Some(1), false)?),
                        ],
                        additional_properties: true,
                    });
                    Kind::Array(Box::new(entry))
                }
            }
            Type::Struct if schema.name.as_deref() == Some(JSON_TYPE_ONE_OF) => {
                let mut choices = Vec::new();
                if schema.optional {
                    choices.push(Generated::new(Kind::Null));
                }
                for field in &schema.fields {
                    let required = non_optional(&field.schema);
                    choices.push(self.generate(&required, Some(field.index), true)?);
                }
                Kind::OneOf(choices)
            }
            Type::Struct if schema.optional => Kind::OneOf(vec![
                Generated::new(Kind::Null),
                self.generate(&non_optional(schema), None, false)?,
            ]),
            Type::Struct => {
                let mut properties = Vec::with_capacity(schema.fields.len());
                for field in &schema.fields {
                    properties.push((
                        field.name.clone(),
                        self.generate(&field.schema, Some(field.index), false)?,
                    ));
                }
                Kind::Object {
                    properties,
                    additional_properties: self.config.object_additional_properties,
                }
            }
        };
        let mut generated = Generated::new(kind);
        if !matches!(generated.kind, Kind::OneOf(_)) {
            generated.title = schema.name.clone();
            if let Some(version) = schema.version {
                keywords.push((CONNECT_VERSION.into(), JsonNode::Int(version)));
            }
            generated.description = schema.doc.clone();
            let parameters: Vec<(String, JsonNode)> = schema
                .parameters
                .iter()
                .filter(|(key, _)| !key.starts_with(NAMESPACE))
                .map(|(key, value)| (key.clone(), JsonNode::Text(value.clone())))
                .collect();
            if !parameters.is_empty() {
                let capacity = sized_capacity(parameters.len());
                let parameters = java_hash_map_order(parameters, capacity);
                keywords.push((CONNECT_PARAMETERS.into(), JsonNode::Object(parameters)));
            }
            if let Some(default) = &schema.default {
                generated.default = self
                    .from_connect_data(Some(schema), default)?
                    .map(schema_default);
            }
            if !ignore_optional && schema.optional {
                generated.keywords = keywords;
                let mut wrapper =
                    Generated::new(Kind::OneOf(vec![Generated::new(Kind::Null), generated]));
                if let Some(index) = index {
                    wrapper.keywords = vec![(CONNECT_INDEX.into(), index_node(index))];
                }
                return Ok(wrapper);
            }
        }
        if let Some(index) = index {
            keywords.push((CONNECT_INDEX.into(), index_node(index)));
        }
        generated.keywords = keywords;
        Ok(generated)
    }

    /// `fromConnectData`: none where Confluent's converter writes nothing (a null value
    /// with no schema, or a required field left null).
    pub(crate) fn from_connect_data(
        &self,
        schema: Option<&Schema>,
        value: &Value,
    ) -> Result<Option<JsonNode>, DataError> {
        if value.is_null() {
            let Some(schema) = schema else {
                return Ok(None);
            };
            if let Some(default) = &schema.default
                && !self.config.ignore_default_for_nullables
            {
                return self.from_connect_data(Some(schema), default);
            }
            return Ok(schema.optional.then_some(JsonNode::Null));
        }
        if let Some(schema) = schema
            && let Some(name) = schema.name.as_deref()
            && let Some(node) = logical_to_json(schema, name, value, self.config.decimal_format)?
        {
            return Ok(Some(node));
        }
        let ty = match schema {
            Some(schema) => schema.ty,
            None => schemaless_type(value)?,
        };
        let mismatch = || {
            DataError(format!(
                "Invalid type for {}: {}",
                schema.map_or("unknown schema", |s| java_type_name(s.ty)),
                java_class(value)
            ))
        };
        Ok(Some(match (ty, value) {
            (Type::Int8, Value::Int8(v)) => JsonNode::Int(i32::from(*v)),
            (Type::Int16, Value::Int16(v)) => JsonNode::Int(i32::from(*v)),
            (Type::Int32, Value::Int32(v)) => JsonNode::Int(*v),
            (Type::Int64, Value::Int64(v)) => JsonNode::Long(*v),
            (Type::Float32, Value::Float32(v)) => JsonNode::Float(*v),
            (Type::Float64, Value::Float64(v)) => JsonNode::Double(*v),
            (Type::Boolean, Value::Boolean(v)) => JsonNode::Boolean(*v),
            (Type::String, Value::String(v)) => JsonNode::Text(v.clone()),
            (Type::Bytes, Value::Bytes(v)) => JsonNode::Binary(v.clone()),
            (Type::Array, Value::Array(items)) => {
                let element = schema.and_then(|s| s.value_schema.as_deref());
                let mut elements = Vec::with_capacity(items.len());
                for item in items {
                    // A null element with nothing to write is still a position in the
                    // array: Jackson adds a null node for it.
                    let node = self.from_connect_data(element, item)?;
                    elements.push(node.unwrap_or(JsonNode::Null));
                }
                JsonNode::Array(elements)
            }
            (Type::Map, Value::Map(entries)) => self.map_to_json(schema, entries)?,
            (Type::Struct, Value::Struct(s)) => {
                let Some(schema) = schema else {
                    return Err(mismatch());
                };
                if *s.schema != *schema {
                    return Err(DataError("Mismatching schema.".into()));
                }
                return self.struct_to_json(schema, s);
            }
            _ => return Err(mismatch()),
        }))
    }

    fn map_to_json(
        &self,
        schema: Option<&Schema>,
        entries: &[(Value, Value)],
    ) -> Result<JsonNode, DataError> {
        let key_schema = schema.and_then(|s| s.key_schema.as_deref());
        let value_schema = schema.and_then(|s| s.value_schema.as_deref());
        let object_mode = match key_schema {
            Some(key) => key.ty == Type::String && !key.optional,
            None => entries.iter().all(|(k, _)| matches!(k, Value::String(_))),
        };
        let mut members: Vec<(String, JsonNode)> = Vec::new();
        let mut pairs = Vec::new();
        for (key, value) in entries {
            let key_node = self
                .from_connect_data(key_schema, key)?
                .unwrap_or(JsonNode::Null);
            let value_node = self
                .from_connect_data(value_schema, value)?
                .unwrap_or(JsonNode::Null);
            if object_mode {
                let name = as_text(&key_node);
                // ObjectNode.set: a repeated name keeps its place and takes the new value.
                match members.iter_mut().find(|(n, _)| *n == name) {
                    Some(member) => member.1 = value_node,
                    None => members.push((name, value_node)),
                }
            } else {
                pairs.push(JsonNode::Object(vec![
                    (KEY_FIELD.into(), key_node),
                    (VALUE_FIELD.into(), value_node),
                ]));
            }
        }
        Ok(if object_mode {
            JsonNode::Object(members)
        } else {
            JsonNode::Array(pairs)
        })
    }

    fn struct_to_json(
        &self,
        schema: &Schema,
        value: &Struct,
    ) -> Result<Option<JsonNode>, DataError> {
        let field_value = |index: usize| -> &Value {
            let raw = &value.values[index];
            let field = &schema.fields[index];
            match (&field.schema.default, raw.is_null()) {
                (Some(default), true) if !self.config.ignore_default_for_nullables => default,
                _ => raw,
            }
        };
        if schema.name.as_deref() == Some(JSON_TYPE_ONE_OF) {
            for field in &schema.fields {
                let chosen = field_value(field.index);
                if !chosen.is_null() {
                    return self.from_connect_data(Some(&field.schema), chosen);
                }
            }
            return self.from_connect_data(Some(schema), &Value::Null);
        }
        let mut members = Vec::with_capacity(schema.fields.len());
        for field in &schema.fields {
            if let Some(node) =
                self.from_connect_data(Some(&field.schema), field_value(field.index))?
            {
                members.push((field.name.clone(), node));
            }
        }
        Ok(Some(JsonNode::Object(members)))
    }

    /// `toConnectSchema` of a schema's text; `version` is the registry's version of it,
    /// the Connect version when the schema carries no `connect.version`.
    pub fn to_connect_schema(
        &self,
        text: &str,
        version: Option<i32>,
    ) -> Result<SchemaRef, DataError> {
        let root = jackson::read_tree(text.as_bytes())
            .map_err(|e| with_cause("Invalid JSON schema", &e.0))?;
        let reader = SchemaReader {
            data: self,
            root: &root,
        };
        reader.read(&root, version, false, 0).map(Arc::new)
    }

    /// `toConnectData`: the JSON value (none for a property that is absent) as Connect data
    /// of `schema`.
    pub(crate) fn to_connect_data(
        &self,
        schema: Option<&SchemaRef>,
        node: Option<&JsonNode>,
    ) -> Result<Value, DataError> {
        let ty = match schema {
            Some(schema) => {
                if node.is_none_or(JsonNode::is_null) {
                    if let Some(default) = &schema.default {
                        return Ok(default.clone());
                    }
                    if node.is_none() || schema.optional {
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
                None | Some(JsonNode::Null) => return Ok(Value::Null),
                Some(JsonNode::Boolean(_)) => Type::Boolean,
                Some(n) if n.is_integral_number() => Type::Int64,
                Some(n) if n.is_number() => Type::Float64,
                Some(JsonNode::Array(_)) => Type::Array,
                Some(JsonNode::Object(_)) => Type::Map,
                Some(JsonNode::Text(_)) => Type::String,
                Some(_) => return Err(DataError("Unknown schema type: null".into())),
            },
        };
        let node = node.expect("a missing node returned above");
        if let Some(schema) = schema
            && let Some(name) = schema.name.as_deref()
            && let Some(value) = logical_to_connect(schema, name, node)?
        {
            return Ok(value);
        }
        Ok(match ty {
            Type::Boolean => Value::Boolean(node.boolean_value()),
            // Java's (byte) of shortValue(), and shortValue() of intValue(): narrowing.
            Type::Int8 => Value::Int8(node.int_value() as i16 as i8),
            Type::Int16 => Value::Int16(node.int_value() as i16),
            Type::Int32 => Value::Int32(node.int_value()),
            Type::Int64 => Value::Int64(node.long_value()),
            Type::Float32 => Value::Float32(node.float_value()),
            Type::Float64 => Value::Float64(node.double_value()),
            Type::Bytes => match node.binary_value() {
                Ok(Some(bytes)) => Value::Bytes(bytes),
                Ok(None) => match node.decimal_value() {
                    Some(decimal) => Value::Bytes(decimal.unscaled.to_twos_complement()),
                    None => Value::Null,
                },
                Err(e) => return Err(with_cause("Invalid bytes field", e)),
            },
            // textValue() is null for anything but text.
            Type::String => node
                .text_value()
                .map_or(Value::Null, |text| Value::String(text.to_string())),
            Type::Array => {
                let element = schema.and_then(|s| s.value_schema.as_ref());
                let mut items = Vec::new();
                for item in node.elements() {
                    items.push(self.to_connect_data(element, Some(item))?);
                }
                Value::Array(items)
            }
            Type::Map => self.map_to_connect(schema, node)?,
            Type::Struct => {
                let schema = schema.expect("a struct type comes from a schema");
                self.struct_to_connect(schema, node)?
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
        let object_mode = key_schema.is_none_or(|k| k.ty == Type::String && !k.optional);
        let mut entries: Vec<(Value, Value)> = Vec::new();
        // A Java HashMap: a repeated key keeps one entry, the last value.
        let mut put = |key: Value, value: Value| match entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => entries.push((key, value)),
        };
        if object_mode {
            let JsonNode::Object(members) = node else {
                return Err(DataError(format!(
                    "Maps with string fields should be encoded as JSON objects, but found {}",
                    node.node_type()
                )));
            };
            for (name, value) in members {
                put(
                    Value::String(name.clone()),
                    self.to_connect_data(value_schema, Some(value))?,
                );
            }
        } else {
            let JsonNode::Array(elements) = node else {
                return Err(DataError(format!(
                    "Maps with non-string fields should be encoded as JSON array of objects, but \
                     found {}",
                    node.node_type()
                )));
            };
            for entry in elements {
                if !matches!(entry, JsonNode::Object(_)) {
                    return Err(DataError(format!(
                        "Found invalid map entry instead of object: {}",
                        entry.node_type()
                    )));
                }
                if entry.size() != 2 {
                    return Err(DataError(format!(
                        "Found invalid map entry, expected length 2 but found :{}",
                        entry.size()
                    )));
                }
                put(
                    self.to_connect_data(key_schema, entry.get(KEY_FIELD))?,
                    self.to_connect_data(value_schema, entry.get(VALUE_FIELD))?,
                );
            }
        }
        Ok(Value::Map(entries))
    }

    fn struct_to_connect(&self, schema: &SchemaRef, node: &JsonNode) -> Result<Value, DataError> {
        let mut result = Struct::new(Arc::clone(schema));
        if schema.name.as_deref() == Some(JSON_TYPE_ONE_OF) {
            // The first choice whose type the value has; else the struct choice sharing the
            // most property names with it (nested names counted too).
            let mut best: Option<(usize, usize)> = None;
            for field in &schema.fields {
                if matches_simple_type(&field.schema, node) {
                    let value = self.to_connect_data(Some(&field.schema), Some(node))?;
                    result.put(&field.name, value)?;
                    return Ok(Value::Struct(result));
                }
                let matching = struct_match(&field.schema, node);
                if matching > best.map_or(0, |(_, m)| m) {
                    best = Some((field.index, matching));
                }
            }
            let Some((index, _)) = best else {
                return Err(DataError(
                    "Did not find matching oneof field for data".into(),
                ));
            };
            let field = &schema.fields[index];
            let value = self.to_connect_data(Some(&field.schema), Some(node))?;
            result.put(&field.name, value)?;
            return Ok(Value::Struct(result));
        }
        if !matches!(node, JsonNode::Object(_)) {
            return Err(DataError(format!(
                "Structs should be encoded as JSON objects, but found {}",
                node.node_type()
            )));
        }
        for field in &schema.fields {
            let value = self.to_connect_data(Some(&field.schema), node.get(&field.name))?;
            if !value.is_null() {
                result.put(&field.name, value)?;
            }
        }
        Ok(Value::Struct(result))
    }
}

/// What everit's schema classes print, by the class `JsonSchemaData` builds.
#[derive(Debug)]
enum Kind {
    Integer,
    Number,
    Boolean,
    String,
    Null,
    Enum(Vec<JsonNode>),
    Array(Box<Generated>),
    /// A string-keyed map: an object with a schema for `additionalProperties`.
    Map(Box<Generated>),
    Object {
        properties: Vec<(String, Generated)>,
        additional_properties: bool,
    },
    OneOf(Vec<Generated>),
}

/// A generated schema before printing: its class, the keywords every schema has, and the
/// `connect.*` keywords in the order they were put (the printed order is the hash map's).
#[derive(Debug)]
struct Generated {
    kind: Kind,
    title: Option<String>,
    description: Option<String>,
    default: Option<JsonNode>,
    keywords: Vec<(String, JsonNode)>,
}

impl Generated {
    fn new(kind: Kind) -> Generated {
        Generated {
            kind,
            title: None,
            description: None,
            default: None,
            keywords: Vec::new(),
        }
    }

    /// The JSON everit prints for the schema (see the module doc for the order).
    fn into_node(self) -> JsonNode {
        let mut members: Vec<(String, JsonNode)> = Vec::new();
        let type_name = match &self.kind {
            Kind::Integer => Some("integer"),
            Kind::Number => Some("number"),
            Kind::String => Some("string"),
            Kind::Null => Some("null"),
            Kind::Array(_) => Some("array"),
            Kind::Map(_) | Kind::Object { .. } => Some("object"),
            Kind::Boolean | Kind::Enum(_) | Kind::OneOf(_) => None,
        };
        if let Some(type_name) = type_name {
            members.push(("type".into(), JsonNode::Text(type_name.into())));
        }
        if let Kind::Enum(symbols) = &self.kind {
            members.push(("enum".into(), JsonNode::Array(symbols.clone())));
        }
        if let Kind::Object {
            additional_properties: false,
            ..
        } = &self.kind
        {
            members.push(("additionalProperties".into(), JsonNode::Boolean(false)));
        }
        if let Some(title) = self.title {
            members.push(("title".into(), JsonNode::Text(title)));
        }
        if let Some(description) = self.description {
            members.push(("description".into(), JsonNode::Text(description)));
        }
        if let Some(default) = self.default {
            members.push(("default".into(), default));
        }
        // Schema copies its builder's map: `new HashMap<>(map)` sizes it for its entries.
        let capacity = copied_capacity(self.keywords.len());
        members.extend(java_hash_map_order(
            java_hash_map_order(self.keywords, GROWN_CAPACITY_MIN),
            capacity,
        ));
        match self.kind {
            Kind::Boolean => members.push(("type".into(), JsonNode::Text("boolean".into()))),
            Kind::Array(items) => members.push(("items".into(), items.into_node())),
            Kind::Map(values) => {
                members.push(("additionalProperties".into(), values.into_node()));
            }
            Kind::Object { properties, .. } if !properties.is_empty() => {
                let capacity = grown_capacity(properties.len());
                let properties = java_hash_map_order(properties, capacity)
                    .into_iter()
                    .map(|(name, schema)| (name, schema.into_node()))
                    .collect();
                members.push(("properties".into(), JsonNode::Object(properties)));
            }
            Kind::OneOf(choices) => {
                let choices = choices.into_iter().map(Generated::into_node).collect();
                members.push(("oneOf".into(), JsonNode::Array(choices)));
            }
            _ => {}
        }
        JsonNode::Object(members)
    }
}

fn index_node(index: usize) -> JsonNode {
    JsonNode::Int(i32::try_from(index).unwrap_or(i32::MAX))
}

/// A default as everit keeps it (`toJsonSchemaValue`): bytes as their base64 text, and
/// numbers as Jackson reads the printed schema back (`BigDecimal` for fractions).
fn schema_default(node: JsonNode) -> JsonNode {
    match node {
        JsonNode::Binary(bytes) => JsonNode::Text(STANDARD.encode(bytes)),
        JsonNode::Array(elements) => {
            JsonNode::Array(elements.into_iter().map(schema_default).collect())
        }
        JsonNode::Object(members) => JsonNode::Object(
            members
                .into_iter()
                .map(|(name, value)| (name, schema_default(value)))
                .collect(),
        ),
        other => other,
    }
}

/// `JsonNode.asText()` of a map key.
fn as_text(node: &JsonNode) -> String {
    match node {
        JsonNode::Text(text) => text.clone(),
        other => jackson::write_string(other).trim_matches('"').to_string(),
    }
}

/// A copy of `schema` that is required (Confluent's `nonOptional`).
fn non_optional(schema: &Schema) -> Schema {
    let mut copy = schema.clone();
    copy.optional = false;
    copy
}

fn element_schema(schema: &Schema) -> Result<&Schema, DataError> {
    schema
        .value_schema
        .as_deref()
        .ok_or_else(|| DataError("Array schema without an element schema".into()))
}

fn map_schemas(schema: &Schema) -> Result<(&Schema, &Schema), DataError> {
    match (&schema.key_schema, &schema.value_schema) {
        (Some(key), Some(value)) => Ok((key, value)),
        _ => Err(DataError("Map schema without key and value schemas".into())),
    }
}

/// `ConnectSchema.schemaType(value.getClass())` for data without a schema.
fn schemaless_type(value: &Value) -> Result<Type, DataError> {
    Ok(match value {
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
        Value::Null | Value::Struct(_) => {
            return Err(DataError(format!(
                "Java class {} does not have corresponding schema type.",
                java_class(value)
            )));
        }
    })
}

/// Whether a union's choice takes `node` by its type alone (`isInstanceOfSchemaTypeForSimpleSchema`).
fn matches_simple_type(schema: &Schema, node: &JsonNode) -> bool {
    match schema.ty {
        Type::Int8 | Type::Int16 | Type::Int32 | Type::Int64 => node.is_integral_number(),
        Type::Float32 | Type::Float64 => node.is_number(),
        Type::Boolean => matches!(node, JsonNode::Boolean(_)),
        Type::String => matches!(node, JsonNode::Text(_)),
        Type::Bytes => matches!(node, JsonNode::Binary(_) | JsonNode::Decimal(_)),
        Type::Array => matches!(node, JsonNode::Array(_)),
        Type::Map => matches!(node, JsonNode::Object(_) | JsonNode::Array(_)),
        Type::Struct => false,
    }
}

/// How many of a struct choice's field names `node` has, nested matches counted too
/// (`matchStructSchema`).
fn struct_match(schema: &Schema, node: &JsonNode) -> usize {
    let JsonNode::Object(members) = node else {
        return 0;
    };
    if schema.ty != Type::Struct {
        return 0;
    }
    let mut matching = 0;
    for field in &schema.fields {
        if let Some((_, value)) = members.iter().find(|(name, _)| *name == field.name) {
            matching += 1 + struct_match(&field.schema, value);
        }
    }
    matching
}

/// Reads a JSON Schema document as a Connect schema, resolving `$ref`s against its root.
struct SchemaReader<'a> {
    data: &'a JsonSchemaData,
    root: &'a JsonNode,
}

impl SchemaReader<'_> {
    fn read(
        &self,
        node: &JsonNode,
        version: Option<i32>,
        force_optional: bool,
        depth: usize,
    ) -> Result<Schema, DataError> {
        if depth >= SCHEMA_DEPTH_MAX {
            return Err(too_deep());
        }
        // Every schema read from here is one level deeper, a referenced one included.
        let depth = depth + 1;
        let members = match node {
            JsonNode::Object(members) => members,
            JsonNode::Boolean(_) => return Err(unsupported("org.everit.json.schema.TrueSchema")),
            other => {
                return Err(DataError(format!(
                    "Invalid JSON schema: a schema must be an object, found {}",
                    other.node_type()
                )));
            }
        };
        let get = |name: &str| node.get(name);
        if let Some(reference) = get("$ref") {
            let target = self.resolve(reference)?;
            return self.read(target, version, force_optional, depth);
        }
        // A list of types is everit's anyOf of one schema per type: each takes the
        // type's own keywords, the anyOf the ones every schema has (title, description,
        // default), which an optional schema then drops as Confluent's converter does.
        if let Some(JsonNode::Array(types)) = get("type") {
            let choices = types
                .iter()
                .map(|ty| {
                    let mut single: Vec<(String, JsonNode)> = members
                        .iter()
                        .filter(|(name, _)| {
                            !matches!(name.as_str(), "type" | "title" | "description" | "default")
                        })
                        .cloned()
                        .collect();
                    single.insert(0, ("type".into(), ty.clone()));
                    JsonNode::Object(single)
                })
                .collect::<Vec<_>>();
            return self.read_union(&choices, node, version, force_optional, depth);
        }
        let parts = parts_of(node)?;
        if parts.len() > 1 {
            // everit's synthetic allOf of what the keywords describe.
            let subschemas = part_nodes(node, &parts);
            return self.read_all_of(&subschemas, node, version, force_optional, depth);
        }
        let Some(part) = parts.first() else {
            return Err(unsupported("org.everit.json.schema.EmptySchema"));
        };
        let connect_type = get(CONNECT_TYPE).and_then(JsonNode::text_value);
        let mut schema = match *part {
            Part::AllOf(subschemas) => {
                return self.read_all_of(subschemas, node, version, force_optional, depth);
            }
            Part::AnyOf(choices) | Part::OneOf(choices) => {
                return self.read_union(choices, node, version, force_optional, depth);
            }
            Part::Enum(symbols) => enum_schema(symbols),
            Part::Const(constant) => enum_schema(std::slice::from_ref(constant)),
            Part::Typed(type_name) => match type_name {
                "boolean" => Schema::new(Type::Boolean),
                "integer" | "number" => {
                    let ty = match connect_type {
                        None if type_name == "integer" => Type::Int64,
                        None => Type::Float64,
                        Some("int8") => Type::Int8,
                        Some("int16") => Type::Int16,
                        Some("int32") => Type::Int32,
                        Some("int64") => Type::Int64,
                        Some("float32") => Type::Float32,
                        Some("float64") => Type::Float64,
                        Some("bytes") => Type::Bytes,
                        Some(other) => {
                            return Err(DataError(format!("Unsupported type {other}")));
                        }
                    };
                    Schema::new(ty)
                }
                "string" if connect_type == Some("bytes") => Schema::new(Type::Bytes),
                "string" => Schema::new(Type::String),
                "array" => self.read_array(node, depth)?,
                "object" => self.read_object(node, connect_type, depth)?,
                "null" => return Err(unsupported("org.everit.json.schema.NullSchema")),
                other => {
                    return Err(DataError(format!(
                        "Invalid JSON schema: unknown type \"{other}\""
                    )));
                }
            },
        };
        self.finish(&mut schema, node, version, force_optional)?;
        Ok(schema)
    }

    /// `oneOf`/`anyOf`: null and one schema is that schema, optional; anything else a
    /// union struct.
    fn read_union(
        &self,
        choices: &[JsonNode],
        node: &JsonNode,
        version: Option<i32>,
        force_optional: bool,
        depth: usize,
    ) -> Result<Schema, DataError> {
        if choices.len() == 1 && self.data.config.flatten_singleton_unions {
            return self.read(&choices[0], None, false, depth);
        }
        if choices.len() == 2
            && let Some(null_at) = choices.iter().position(is_null_schema)
        {
            let other = &choices[1 - null_at];
            return self.read(other, version, true, depth);
        }
        let mut schema = Schema::new(Type::Struct).named(JSON_TYPE_ONE_OF);
        let mut index = 0;
        for choice in choices {
            if is_null_schema(choice) {
                schema.optional = true;
            } else {
                let field = self.read(choice, None, true, depth)?;
                schema = schema.field(format!("{JSON_TYPE_ONE_OF}.field.{index}"), field);
                index += 1;
            }
        }
        self.finish(&mut schema, node, version, force_optional)?;
        Ok(schema)
    }

    /// `allOf` (or everit's synthetic one): a struct of every property its object
    /// subschemas declare, followed through `$ref`s and nested `allOf`s; without
    /// properties, the one subschema Confluent's converter picks (a combined one, else a
    /// string or number beside a `const` or `enum`, else a string, else a reference).
    /// Like Confluent's, the result carries none of the `allOf`'s own title, description
    /// or version.
    fn read_all_of(
        &self,
        subschemas: &[JsonNode],
        node: &JsonNode,
        version: Option<i32>,
        force_optional: bool,
        depth: usize,
    ) -> Result<Schema, DataError> {
        let mut properties: Vec<(String, JsonNode)> = Vec::new();
        let mut required: Vec<(String, bool)> = Vec::new();
        let (mut constant, mut symbols, mut number, mut string, mut combined, mut reference) =
            (None, None, None, None, None, None);
        for subschema in subschemas {
            if subschema.get("$ref").is_some() {
                reference = Some(subschema);
            } else if matches!(subschema.get("type"), Some(JsonNode::Array(_))) {
                combined = Some(subschema);
            } else {
                let parts = parts_of(subschema)?;
                match parts.as_slice() {
                    [Part::Const(_)] => constant = Some(subschema),
                    [Part::Enum(_)] => symbols = Some(subschema),
                    [Part::Typed("integer" | "number")] => number = Some(subschema),
                    [Part::Typed("string")] => string = Some(subschema),
                    [Part::AllOf(_) | Part::AnyOf(_) | Part::OneOf(_)] => {
                        combined = Some(subschema)
                    }
                    [_, _, ..] => combined = Some(subschema),
                    _ => {}
                }
            }
            self.collect_properties(subschema, &mut properties, &mut required, depth)?;
        }
        if !properties.is_empty() {
            let mut schema = Schema::new(Type::Struct);
            for (name, property) in properties {
                let is_required = required.iter().any(|(n, required)| *n == name && *required);
                let optional = self.data.config.use_optional_for_nonrequired && !is_required;
                let field = self.read(&property, None, optional, depth)?;
                schema = schema.field(name, field);
            }
            schema.optional |= force_optional;
            return Ok(schema);
        }
        let chosen = if combined.is_some() {
            combined
        } else if constant.is_some() {
            string.or(number)
        } else if symbols.is_some() {
            if string.is_some() { symbols } else { number }
        } else if string.is_some() {
            number.or(string)
        } else {
            reference
        };
        match chosen {
            Some(subschema) => self.read(subschema, version, force_optional, depth),
            None => Err(DataError(format!(
                "Unsupported criterion allOf for {}",
                jackson::write_string(node)
            ))),
        }
    }

    /// The properties (and whether each is required) an `allOf` member declares
    /// (`collectPropertySchemas`): an object's, a reference's target's, a nested `allOf`'s
    /// members'. A later declaration of a name keeps the first one's place.
    fn collect_properties(
        &self,
        subschema: &JsonNode,
        properties: &mut Vec<(String, JsonNode)>,
        required: &mut Vec<(String, bool)>,
        depth: usize,
    ) -> Result<(), DataError> {
        if depth >= SCHEMA_DEPTH_MAX {
            return Err(too_deep());
        }
        if let Some(reference) = subschema.get("$ref") {
            let target = self.resolve(reference)?;
            return self.collect_properties(target, properties, required, depth + 1);
        }
        if matches!(subschema.get("type"), Some(JsonNode::Array(_))) {
            return Ok(());
        }
        let parts = parts_of(subschema)?;
        if parts.len() > 1 {
            for part in part_nodes(subschema, &parts) {
                self.collect_properties(&part, properties, required, depth + 1)?;
            }
            return Ok(());
        }
        match parts.first() {
            Some(Part::AllOf(members)) => {
                for member in *members {
                    self.collect_properties(member, properties, required, depth + 1)?;
                }
            }
            Some(Part::Typed("object")) => {
                let declared: Vec<(String, &JsonNode)> = match subschema.get("properties") {
                    Some(JsonNode::Object(members)) => {
                        members.iter().map(|(n, s)| (n.clone(), s)).collect()
                    }
                    _ => Vec::new(),
                };
                let required_names: Vec<&str> = subschema
                    .get("required")
                    .map(|r| {
                        r.elements()
                            .into_iter()
                            .filter_map(JsonNode::text_value)
                            .collect()
                    })
                    .unwrap_or_default();
                let capacity = grown_capacity(declared.len());
                for (name, schema) in java_hash_map_order(declared, capacity) {
                    let is_required = required_names.contains(&name.as_str());
                    match properties.iter_mut().find(|(n, _)| *n == name) {
                        Some(existing) => existing.1 = schema.clone(),
                        None => properties.push((name.clone(), schema.clone())),
                    }
                    match required.iter_mut().find(|(n, _)| *n == name) {
                        Some(existing) => existing.1 = is_required,
                        None => required.push((name, is_required)),
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn read_array(&self, node: &JsonNode, depth: usize) -> Result<Schema, DataError> {
        let Some(items) = node
            .get("items")
            .filter(|items| matches!(items, JsonNode::Object(_)))
        else {
            return Err(DataError(
                "Array schema did not specify the items type".into(),
            ));
        };
        let items = self.dereference(items, depth)?;
        let is_map = node.get(CONNECT_TYPE).and_then(JsonNode::text_value) == Some("map");
        if is_map && items.get("properties").is_some() {
            let properties = items.get("properties").expect("checked above");
            let entry = |name: &str| {
                properties.get(name).ok_or_else(|| {
                    DataError(format!("Map entry schema has no \"{name}\" property"))
                })
            };
            let key = self.read(entry(KEY_FIELD)?, None, false, depth)?;
            let value = self.read(entry(VALUE_FIELD)?, None, false, depth)?;
            return Ok(Schema::map(key, value));
        }
        Ok(Schema::array(self.read(items, None, false, depth)?))
    }

    fn read_object(
        &self,
        node: &JsonNode,
        connect_type: Option<&str>,
        depth: usize,
    ) -> Result<Schema, DataError> {
        if connect_type == Some("map") {
            let Some(values) = node
                .get("additionalProperties")
                .filter(|v| matches!(v, JsonNode::Object(_)))
            else {
                return Err(DataError(
                    "Map schema did not specify the additionalProperties type".into(),
                ));
            };
            let values = self.read(values, None, false, depth)?;
            return Ok(Schema::map(Schema::new(Type::String), values));
        }
        let properties: Vec<(String, &JsonNode)> = match node.get("properties") {
            Some(JsonNode::Object(members)) => members
                .iter()
                .map(|(name, schema)| (name.clone(), schema))
                .collect(),
            _ => Vec::new(),
        };
        let required: Vec<&str> = node
            .get("required")
            .map(|r| {
                r.elements()
                    .into_iter()
                    .filter_map(JsonNode::text_value)
                    .collect()
            })
            .unwrap_or_default();
        // everit keeps properties in a HashMap; Confluent numbers them in its order unless
        // a property carries its connect.index.
        let capacity = grown_capacity(properties.len());
        let mut by_index: BTreeMap<i64, (String, &JsonNode)> = BTreeMap::new();
        for (name, property) in java_hash_map_order(properties, capacity) {
            let index = match property.get(CONNECT_INDEX) {
                Some(index) if index.is_integral_number() => index.long_value(),
                _ => by_index.len() as i64,
            };
            by_index.insert(index, (name, property));
        }
        let mut schema = Schema::new(Type::Struct);
        for (name, property) in by_index.into_values() {
            let optional =
                self.data.config.use_optional_for_nonrequired && !required.contains(&name.as_str());
            let field = self.read(property, None, optional, depth)?;
            schema = schema.field(name, field);
        }
        Ok(schema)
    }

    /// The schema `$ref` names, when `node` is a reference.
    fn dereference<'n>(
        &'n self,
        node: &'n JsonNode,
        depth: usize,
    ) -> Result<&'n JsonNode, DataError> {
        let mut node = node;
        for _ in depth..SCHEMA_DEPTH_MAX {
            match node.get("$ref") {
                Some(reference) => node = self.resolve(reference)?,
                None => return Ok(node),
            }
        }
        Err(too_deep())
    }

    /// A `$ref` within the document: `#` or a JSON pointer after `#`.
    fn resolve(&self, reference: &JsonNode) -> Result<&JsonNode, DataError> {
        let text = reference.text_value().unwrap_or_default();
        let unresolved = || {
            DataError(format!(
                "Unsupported JSON schema reference \"{text}\": only references within the \
                 schema (#/definitions/..., #/$defs/...) are supported"
            ))
        };
        let Some(pointer) = text.strip_prefix('#') else {
            return Err(unresolved());
        };
        let mut node = self.root;
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            node = match node {
                JsonNode::Object(_) => node.get(&token),
                JsonNode::Array(elements) => {
                    token.parse::<usize>().ok().and_then(|i| elements.get(i))
                }
                _ => None,
            }
            .ok_or_else(unresolved)?;
        }
        Ok(node)
    }

    /// The keywords every schema carries: title (the name, unless it has one), version,
    /// description, parameters, default; then optional when forced.
    fn finish(
        &self,
        schema: &mut Schema,
        node: &JsonNode,
        version: Option<i32>,
        force_optional: bool,
    ) -> Result<(), DataError> {
        if schema.name.is_none()
            && let Some(title) = node.get("title").and_then(JsonNode::text_value)
        {
            schema.name = Some(title.to_string());
        }
        match node.get(CONNECT_VERSION) {
            Some(v) if v.is_int() => schema.version = Some(v.int_value()),
            _ => schema.version = version,
        }
        if let Some(description) = node.get("description").and_then(JsonNode::text_value) {
            schema.doc = Some(description.to_string());
        }
        if let Some(JsonNode::Object(parameters)) = node.get(CONNECT_PARAMETERS) {
            for (key, value) in parameters {
                let value = match value {
                    JsonNode::Text(text) => text.clone(),
                    other => as_text(other),
                };
                schema.parameters.insert(key.clone(), value);
            }
        }
        if let Some(default) = node.get("default") {
            let built: SchemaRef = Arc::new(schema.clone());
            let value = self.data.to_connect_data(Some(&built), Some(default))?;
            if !value.is_null() {
                schema.default = Some(value);
            }
        }
        if force_optional {
            schema.optional = true;
        }
        Ok(())
    }
}

/// One schema everit extracts from a schema object's keywords, in its extractors' order
/// (enum, the combining keywords, const, the type, types sniffed from keywords). More
/// than one make a synthetic `allOf`.
#[derive(Debug, Clone, Copy)]
enum Part<'a> {
    Enum(&'a [JsonNode]),
    AllOf(&'a [JsonNode]),
    AnyOf(&'a [JsonNode]),
    OneOf(&'a [JsonNode]),
    Const(&'a JsonNode),
    /// A type, named or sniffed (`properties` makes an object, `minLength` a string).
    Typed(&'a str),
}

/// Keywords only one type has, by the type everit infers from them without `type`.
const SNIFFED_TYPES: [(&str, &[&str]); 4] = [
    (
        "object",
        &[
            "properties",
            "additionalProperties",
            "required",
            "minProperties",
            "maxProperties",
            "dependencies",
            "patternProperties",
            "propertyNames",
        ],
    ),
    (
        "array",
        &[
            "items",
            "additionalItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
        ],
    ),
    (
        "number",
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ],
    ),
    ("string", &["minLength", "maxLength", "pattern", "format"]),
];

/// The keywords that make parts other than the type.
const PART_KEYWORDS: [&str; 5] = ["enum", "allOf", "anyOf", "oneOf", "const"];

fn parts_of(node: &JsonNode) -> Result<Vec<Part<'_>>, DataError> {
    let list = |keyword: &str| -> Result<Option<&[JsonNode]>, DataError> {
        match node.get(keyword) {
            None => Ok(None),
            Some(JsonNode::Array(elements)) => Ok(Some(elements.as_slice())),
            Some(other) => Err(DataError(format!(
                "Invalid JSON schema: {keyword} must be an array, found {}",
                other.node_type()
            ))),
        }
    };
    let mut parts = Vec::new();
    if let Some(symbols) = list("enum")? {
        parts.push(Part::Enum(symbols));
    }
    if let Some(subschemas) = list("allOf")? {
        parts.push(Part::AllOf(subschemas));
    }
    if let Some(choices) = list("anyOf")? {
        parts.push(Part::AnyOf(choices));
    }
    if let Some(choices) = list("oneOf")? {
        parts.push(Part::OneOf(choices));
    }
    if let Some(constant) = node.get("const") {
        parts.push(Part::Const(constant));
    }
    match node.get("type") {
        Some(JsonNode::Text(name)) => parts.push(Part::Typed(name)),
        Some(other) => {
            return Err(DataError(format!(
                "Invalid JSON schema: type must be a string or an array, found {}",
                other.node_type()
            )));
        }
        None => {
            for (type_name, keywords) in SNIFFED_TYPES {
                if keywords.iter().any(|k| node.get(k).is_some()) {
                    parts.push(Part::Typed(type_name));
                }
            }
        }
    }
    Ok(parts)
}

/// The members of a synthetic `allOf`, each as a schema of its own: the combining
/// keywords, `enum` and `const` alone, and each type with its keywords and an explicit
/// `type` (the title, description and default stay with the `allOf`).
fn part_nodes(node: &JsonNode, parts: &[Part<'_>]) -> Vec<JsonNode> {
    let members = match node {
        JsonNode::Object(members) => members.as_slice(),
        _ => &[],
    };
    parts
        .iter()
        .map(|part| {
            let single =
                |keyword: &str, value: JsonNode| JsonNode::Object(vec![(keyword.into(), value)]);
            match *part {
                Part::Enum(symbols) => single("enum", JsonNode::Array(symbols.to_vec())),
                Part::AllOf(subschemas) => single("allOf", JsonNode::Array(subschemas.to_vec())),
                Part::AnyOf(choices) => single("anyOf", JsonNode::Array(choices.to_vec())),
                Part::OneOf(choices) => single("oneOf", JsonNode::Array(choices.to_vec())),
                Part::Const(constant) => single("const", constant.clone()),
                Part::Typed(type_name) => {
                    let mut typed = vec![("type".to_string(), JsonNode::Text(type_name.into()))];
                    typed.extend(
                        members
                            .iter()
                            .filter(|(name, _)| {
                                !PART_KEYWORDS.contains(&name.as_str())
                                    && !matches!(
                                        name.as_str(),
                                        "type" | "title" | "description" | "default"
                                    )
                            })
                            .cloned(),
                    );
                    JsonNode::Object(typed)
                }
            }
        })
        .collect()
}

fn too_deep() -> DataError {
    DataError(format!(
        "JSON schema nests deeper than {SCHEMA_DEPTH_MAX} schemas (a recursive schema?); \
         recursive schemas are not supported"
    ))
}

fn unsupported(class: &str) -> DataError {
    DataError(format!("Unsupported schema type {class}"))
}

fn is_null_schema(node: &JsonNode) -> bool {
    node.get("type").and_then(JsonNode::text_value) == Some("null")
}

/// `enum`/`const`: a string with Confluent's enum parameters (`io.confluent.connect.json.Enum`
/// and one `io.confluent.connect.json.Enum.<symbol>` per symbol).
fn enum_schema(symbols: &[JsonNode]) -> Schema {
    let mut schema = Schema::new(Type::String).with_parameter(JSON_TYPE_ENUM, "");
    for symbol in symbols {
        let symbol = match symbol {
            JsonNode::Null => NULL_MARKER.to_string(),
            other => as_text(other),
        };
        schema = schema.with_parameter(format!("{JSON_TYPE_ENUM}.{symbol}"), symbol);
    }
    schema
}

/// The smallest table `java.util.HashMap` starts with.
const GROWN_CAPACITY_MIN: usize = 16;

/// The table size of a `new HashMap<>()` after `entries` puts (it doubles past 3/4 full).
fn grown_capacity(entries: usize) -> usize {
    let mut capacity = GROWN_CAPACITY_MIN;
    while entries > capacity / 4 * 3 {
        capacity *= 2;
    }
    capacity
}

/// The table size of `new HashMap<>(map)` for a map of `entries` (JDK 17's sizing:
/// the power of two at least `entries / 0.75 + 1`).
fn copied_capacity(entries: usize) -> usize {
    if entries == 0 {
        return 1;
    }
    let wanted = (entries as f32 / 0.75 + 1.0) as usize;
    wanted.next_power_of_two()
}

/// The table size of `new HashMap<>(entries)` after `entries` puts, as org.json's
/// `JSONObject(Map)` builds the map everit prints `connect.parameters` from.
fn sized_capacity(entries: usize) -> usize {
    let mut capacity = entries.max(1).next_power_of_two();
    while entries > capacity * 3 / 4 {
        capacity *= 2;
    }
    capacity
}

/// Java's `String.hashCode`, over UTF-16 code units.
fn java_string_hash(text: &str) -> i32 {
    text.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The order a `java.util.HashMap` with a table of `capacity` buckets iterates entries
/// put in the given order: by bucket (the spread hash's low bits), in put order within a
/// bucket. Confluent's output order comes from such maps, so matching its text needs it.
pub(crate) fn java_hash_map_order<T>(
    entries: Vec<(String, T)>,
    capacity: usize,
) -> Vec<(String, T)> {
    debug_assert!(capacity.is_power_of_two());
    let mask = (capacity - 1) as u32;
    let mut keyed: Vec<(u32, (String, T))> = entries
        .into_iter()
        .map(|entry| {
            let hash = java_string_hash(&entry.0) as u32;
            ((hash ^ (hash >> 16)) & mask, entry)
        })
        .collect();
    keyed.sort_by_key(|(bucket, _)| *bucket);
    keyed.into_iter().map(|(_, entry)| entry).collect()
}
