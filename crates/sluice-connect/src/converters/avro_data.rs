//! Confluent's `AvroData`: Connect schemas and values to Avro and back, as Confluent's
//! `AvroConverter` maps them.
//!
//! Connect → Avro: `INT8`/`INT16` are Avro `int` with `"connect.type"`; a struct is a
//! record named by its Connect name, or `io.confluent.connect.avro.ConnectDefault`,
//! `ConnectDefault2`, ... in the order met; an optional schema is the union
//! `["null", T]` (`[T, "null"]` when it has a default), a record field of it defaults to
//! null; a map with string keys is an Avro map, any other an array of `MapEntry` records;
//! Decimal is `bytes` with `logicalType` `decimal`, its `precision` from
//! `connect.decimal.precision` (64 by default); Date, Time and Timestamp are `date`,
//! `time-millis` and `timestamp-millis`. With `connect.meta.data` (the default) each schema
//! carries `connect.doc`, `connect.version`, `connect.parameters`, `connect.default` and
//! `connect.name`, in that order, so Avro → Connect gives the Connect schema back.
//!
//! Avro → Connect reads those properties back and maps what Connect never wrote: enums
//! become strings with `io.confluent.connect.avro.Enum` parameters, general unions become
//! structs named `io.confluent.connect.avro.Union` with one optional field per branch,
//! fixed becomes bytes with `connect.fixed.size`, other logical types their base type.
//! The registry's version of the schema becomes the Connect schema's version when the
//! schema carries no `connect.version`.
//!
//! Schemaless data (no Connect schema) travels as Confluent's `Anything` record.
//!
//! What it does not do: `enhanced.avro.schema.support`, `generalized.sum.type.support` and
//! `discard.type.doc.default` are refused when set (Connect's parameters are sorted maps
//! here, so an enum's symbol order, which those need, would not survive), and recursive
//! Avro schemas (which Connect can only hold through Java's cyclic schema wrappers) are
//! refused with a [`DataError`].
//!
//! Cost: converting a schema walks it once; the converter caches Avro → Connect by the
//! schema's text (`schemas.cache.config` entries).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use super::avro_binary::{AvroRecord, AvroValue};
use super::avro_schema::{AvroField, AvroKind, AvroNode, AvroSchema, Name, RecordType};
use super::decimal::BigInteger;
use super::jackson::{self, JsonNode};
use super::{BoundedCache, Settings, java_class, java_type_name};
use crate::ConfigError;
use crate::data::{
    DATE, DECIMAL, DECIMAL_SCALE, DataError, Schema, SchemaRef, Struct, TIME, TIMESTAMP, Type,
    Value,
};

pub const NAMESPACE: &str = "io.confluent.connect.avro";
pub const DEFAULT_SCHEMA_NAME: &str = "ConnectDefault";
pub const DEFAULT_SCHEMA_FULL_NAME: &str = "io.confluent.connect.avro.ConnectDefault";
pub const MAP_ENTRY_TYPE_NAME: &str = "MapEntry";
pub const KEY_FIELD: &str = "key";
pub const VALUE_FIELD: &str = "value";
pub const CONNECT_NAME_PROP: &str = "connect.name";
pub const CONNECT_DOC_PROP: &str = "connect.doc";
pub const CONNECT_VERSION_PROP: &str = "connect.version";
pub const CONNECT_DEFAULT_VALUE_PROP: &str = "connect.default";
pub const CONNECT_PARAMETERS_PROP: &str = "connect.parameters";
pub const CONNECT_INTERNAL_TYPE_NAME: &str = "connect.internal.type";
pub const CONNECT_TYPE_PROP: &str = "connect.type";
pub const AVRO_RECORD_DOC_PROP: &str = "io.confluent.connect.avro.record.doc";
pub const AVRO_ENUM_DOC_PREFIX_PROP: &str = "io.confluent.connect.avro.enum.doc.";
pub const AVRO_FIELD_DOC_PREFIX_PROP: &str = "io.confluent.connect.avro.field.doc.";
pub const AVRO_FIELD_DEFAULT_FLAG_PROP: &str = "io.confluent.connect.avro.field.default";
pub const AVRO_ENUM_DEFAULT_PREFIX_PROP: &str = "io.confluent.connect.avro.enum.default.";
pub const AVRO_TYPE_UNION: &str = "io.confluent.connect.avro.Union";
pub const AVRO_TYPE_ENUM: &str = "io.confluent.connect.avro.Enum";
pub const AVRO_TYPE_ANYTHING: &str = "io.confluent.connect.avro.Anything";
pub const CONNECT_AVRO_FIXED_SIZE_PROP: &str = "connect.fixed.size";
pub const CONNECT_AVRO_DECIMAL_PRECISION_PROP: &str = "connect.decimal.precision";
pub const CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT: i32 = 64;

const AVRO_PROP: &str = "avro";
const AVRO_LOGICAL_TYPE_PROP: &str = "logicalType";
const AVRO_LOGICAL_TIMESTAMP_MILLIS: &str = "timestamp-millis";
const AVRO_LOGICAL_TIME_MILLIS: &str = "time-millis";
const AVRO_LOGICAL_DATE: &str = "date";
const AVRO_LOGICAL_DECIMAL: &str = "decimal";
const MILLIS_PER_DAY: i64 = 24 * 60 * 60 * 1000;

/// The fields of the `Anything` record, in order.
const ANYTHING_FIELDS: [&str; 9] = [
    "boolean", "bytes", "double", "float", "int", "long", "string", "array", "map",
];

/// Confluent's `ANYTHING_SCHEMA` as Avro prints it.
const ANYTHING_SCHEMA_JSON: &str = r#"{"type":"record","name":"Anything","namespace":"io.confluent.connect.avro","fields":[{"name":"boolean","type":["null","boolean"],"default":null},{"name":"bytes","type":["null","bytes"],"default":null},{"name":"double","type":["null","double"],"default":null},{"name":"float","type":["null","float"],"default":null},{"name":"int","type":["null","int"],"default":null},{"name":"long","type":["null","long"],"default":null},{"name":"string","type":["null","string"],"default":null},{"name":"array","type":["null",{"type":"array","items":"Anything"}],"default":null},{"name":"map","type":["null",{"type":"array","items":{"type":"record","name":"MapEntry","fields":[{"name":"key","type":"Anything"},{"name":"value","type":"Anything"}]}}],"default":null}]}"#;

/// The schema of schemaless data.
pub(crate) fn anything_schema() -> &'static AvroSchema {
    static ANYTHING: OnceLock<AvroSchema> = OnceLock::new();
    ANYTHING.get_or_init(|| {
        AvroSchema::parse(ANYTHING_SCHEMA_JSON).expect("Confluent's Anything schema parses")
    })
}

/// `AvroDataConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvroDataConfig {
    /// `connect.meta.data`: carry Connect's metadata in Avro properties.
    pub connect_meta_data: bool,
    /// `scrub.invalid.names`: make names valid Avro names.
    pub scrub_invalid_names: bool,
    /// `allow.optional.map.keys`: an optional string key still makes an Avro map.
    pub allow_optional_map_keys: bool,
    /// `ignore.default.for.nullables`: write a null field as null, not as its default.
    pub ignore_default_for_nullables: bool,
    /// `flatten.singleton.unions`: a union of one type is that type.
    pub flatten_singleton_unions: bool,
    /// `schemas.cache.config`.
    pub schemas_cache_size: usize,
}

impl Default for AvroDataConfig {
    fn default() -> AvroDataConfig {
        AvroDataConfig {
            connect_meta_data: true,
            scrub_invalid_names: false,
            allow_optional_map_keys: false,
            ignore_default_for_nullables: false,
            flatten_singleton_unions: true,
            schemas_cache_size: 1000,
        }
    }
}

impl AvroDataConfig {
    pub fn parse(settings: &Settings<'_>) -> Result<AvroDataConfig, ConfigError> {
        let defaults = AvroDataConfig::default();
        let mut errors = ConfigError::default();
        let mut unsupported_set = Vec::new();
        let mut boolean = |name: &str, default: bool| match settings.boolean(name, default) {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                default
            }
        };
        let config = AvroDataConfig {
            connect_meta_data: boolean("connect.meta.data", defaults.connect_meta_data),
            scrub_invalid_names: boolean("scrub.invalid.names", defaults.scrub_invalid_names),
            allow_optional_map_keys: boolean(
                "allow.optional.map.keys",
                defaults.allow_optional_map_keys,
            ),
            ignore_default_for_nullables: boolean(
                "ignore.default.for.nullables",
                defaults.ignore_default_for_nullables,
            ),
            flatten_singleton_unions: boolean(
                "flatten.singleton.unions",
                defaults.flatten_singleton_unions,
            ),
            schemas_cache_size: defaults.schemas_cache_size,
        };
        for unsupported in [
            "enhanced.avro.schema.support",
            "generalized.sum.type.support",
            "discard.type.doc.default",
        ] {
            if boolean(unsupported, false) {
                unsupported_set.push(unsupported);
            }
        }
        for unsupported in unsupported_set {
            errors.push(settings.invalid(
                unsupported,
                "true",
                "Sluice's AvroConverter does not support this setting",
            ));
        }
        let mut config = config;
        match settings.int("schemas.cache.config", 1000) {
            Ok(size) => config.schemas_cache_size = usize::try_from(size).unwrap_or(0),
            Err(e) => errors.push(e),
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }
}

/// (Avro schema text, registry version) → Connect schema.
type ToConnectSchemas = BoundedCache<(String, Option<i32>), Option<SchemaRef>>;

/// Confluent's `AvroData`. Its methods keep Confluent's names (`fromConnectSchema`,
/// `toConnectData`, ...), so a reader of Confluent's code finds them.
#[derive(Debug)]
pub struct AvroData {
    config: AvroDataConfig,
    /// (Avro schema text, registry version) → Connect schema.
    to_connect_schemas: Mutex<ToConnectSchemas>,
}

#[allow(clippy::wrong_self_convention)] // Confluent's method names, kept on purpose.
impl AvroData {
    pub fn new(config: AvroDataConfig) -> AvroData {
        let capacity = config.schemas_cache_size;
        AvroData {
            config,
            to_connect_schemas: Mutex::new(BoundedCache::new(capacity)),
        }
    }

    pub fn config(&self) -> &AvroDataConfig {
        &self.config
    }

    /// `fromConnectSchema`: the Avro schema of a Connect schema (`Anything` for none).
    pub fn from_connect_schema(&self, schema: Option<&Schema>) -> Result<AvroSchema, DataError> {
        let Some(schema) = schema else {
            return Ok(anything_schema().clone());
        };
        let mut context = FromConnect {
            data: self,
            schema_map: Vec::new(),
            cycle_references: Vec::new(),
            seen_named_types: HashSet::new(),
            name_index: 0,
        };
        let root = context.schema(schema, false)?;
        Ok(AvroSchema::from_root(root))
    }

    /// `fromConnectData`: a Connect value as an Avro datum of `avro` (the schema
    /// [`from_connect_schema`](Self::from_connect_schema) gave); none for a null value.
    pub(crate) fn from_connect_data(
        &self,
        schema: Option<&Schema>,
        avro: &AvroSchema,
        value: &Value,
    ) -> Result<Option<AvroValue>, DataError> {
        let datum = self.datum(schema, avro, &avro.root, value, false)?;
        Ok(match datum {
            AvroValue::Null => None,
            other => Some(other),
        })
    }

    /// `toConnectSchema`: the Connect schema of an Avro schema (none for `Anything`);
    /// `version` is the registry's, used when the schema carries no `connect.version`.
    pub fn to_connect_schema(
        &self,
        avro: &AvroSchema,
        version: Option<i32>,
    ) -> Result<Option<SchemaRef>, DataError> {
        let text = avro.to_json()?;
        let key = (text, version);
        if let Some(cached) = self.cache().get(&key) {
            return Ok(cached);
        }
        let schema = if avro == anything_schema() {
            None
        } else {
            let mut context = ToConnect {
                data: self,
                avro,
                records_open: Vec::new(),
            };
            Some(Arc::new(context.schema(&avro.root, false, None, version)?))
        };
        self.cache().insert(key, schema.clone());
        Ok(schema)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, ToConnectSchemas> {
        // Entries are whole values: a panic elsewhere cannot leave one half-written.
        self.to_connect_schemas
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `toConnectData`: an Avro datum (read as `avro`) as the Connect value of `schema`
    /// (the one [`to_connect_schema`](Self::to_connect_schema) gave).
    pub(crate) fn to_connect_data(
        &self,
        schema: Option<&SchemaRef>,
        avro: &AvroSchema,
        value: &AvroValue,
    ) -> Result<Value, DataError> {
        ToConnectData { data: self, avro }.value(schema, value)
    }

    fn scrub<'a>(&self, name: &'a str) -> std::borrow::Cow<'a, str> {
        if self.config.scrub_invalid_names {
            std::borrow::Cow::Owned(scrub_name(name))
        } else {
            std::borrow::Cow::Borrowed(name)
        }
    }

    /// `splitName`: namespace and name of a dotted Connect name.
    fn split_name(&self, full: &str) -> Name {
        let parts: Vec<String> = full
            .split('.')
            .map(|p| self.scrub(p).into_owned())
            .collect();
        let (last, rest) = parts.split_last().expect("split yields one piece");
        Name {
            name: last.clone(),
            namespace: if rest.is_empty() {
                None
            } else {
                Some(rest.join("."))
            },
        }
    }

    /// `scrubFullName`.
    fn scrub_full_name(&self, name: &str) -> String {
        if !self.config.scrub_invalid_names {
            return name.to_string();
        }
        self.split_name(name).full()
    }

    fn datum(
        &self,
        schema: Option<&Schema>,
        avro: &AvroSchema,
        node: &AvroNode,
        value: &Value,
        schemaless_null_container: bool,
    ) -> Result<AvroValue, DataError> {
        let ty = match schema {
            Some(schema) => Some(schema.ty),
            None => schemaless_type(value)?,
        };
        let Some(ty) = ty else {
            return Ok(if schemaless_null_container {
                anything(None)
            } else {
                AvroValue::Null
            });
        };
        if value.is_null() {
            if schema.is_some_and(|s| !s.optional) {
                return Err(DataError("Found null value for non-optional schema".into()));
            }
            return Ok(if schema.is_none() && schemaless_null_container {
                anything(None)
            } else {
                AvroValue::Null
            });
        }
        let logical;
        let value = match schema {
            Some(schema) => match to_avro_logical(schema, value)? {
                Some(converted) => {
                    logical = converted;
                    &logical
                }
                None => value,
            },
            None => value,
        };
        let mismatch = || {
            DataError(format!(
                "Invalid type for {}: {}",
                java_type_name(ty),
                java_class(value)
            ))
        };
        let wrap = |field: &str, datum: AvroValue| match schema {
            Some(_) => datum,
            None => anything(Some((field, datum))),
        };
        Ok(match ty {
            Type::Int8 => match value {
                Value::Int8(v) => wrap("int", AvroValue::Int(i32::from(*v))),
                _ => return Err(mismatch()),
            },
            Type::Int16 => match value {
                Value::Int16(v) => wrap("int", AvroValue::Int(i32::from(*v))),
                _ => return Err(mismatch()),
            },
            Type::Int32 => match value {
                Value::Int32(v) => wrap("int", AvroValue::Int(*v)),
                _ => return Err(mismatch()),
            },
            Type::Int64 => match value {
                Value::Int64(v) => wrap("long", AvroValue::Long(*v)),
                _ => return Err(mismatch()),
            },
            Type::Float32 => match value {
                Value::Float32(v) => wrap("float", AvroValue::Float(*v)),
                _ => return Err(mismatch()),
            },
            Type::Float64 => match value {
                Value::Float64(v) => wrap("double", AvroValue::Double(*v)),
                _ => return Err(mismatch()),
            },
            Type::Boolean => match value {
                Value::Boolean(v) => wrap("boolean", AvroValue::Boolean(*v)),
                _ => return Err(mismatch()),
            },
            Type::String => match value {
                Value::String(v) => wrap("string", AvroValue::String(v.clone())),
                _ => return Err(mismatch()),
            },
            Type::Bytes => {
                let Value::Bytes(bytes) = value else {
                    return Err(mismatch());
                };
                match schema.filter(|s| is_fixed_schema(s)) {
                    Some(schema) => self.fixed_datum(schema, avro, node, bytes)?,
                    None => wrap("bytes", AvroValue::Bytes(bytes.clone())),
                }
            }
            Type::Array => {
                let Value::Array(items) = value else {
                    return Err(mismatch());
                };
                let (element_schema, element_node) = match schema {
                    Some(schema) => {
                        let underlying = self.underlying_if_optional(schema, avro, node)?;
                        let AvroKind::Array(items) = &underlying.kind else {
                            return Err(DataError(format!(
                                "Not an array schema: {}",
                                underlying.type_name()
                            )));
                        };
                        (schema.value_schema.as_deref(), &**items)
                    }
                    None => (None, &anything_schema().root),
                };
                let elements = items
                    .iter()
                    .map(|item| self.datum(element_schema, avro, element_node, item, true))
                    .collect::<Result<_, _>>()?;
                wrap("array", AvroValue::Array(elements))
            }
            Type::Map => {
                let Value::Map(entries) = value else {
                    return Err(mismatch());
                };
                if let Some(schema) = schema
                    && self.string_keyed_map(schema)
                {
                    let underlying = self.underlying_if_optional(schema, avro, node)?;
                    let AvroKind::Map(values) = &underlying.kind else {
                        return Err(DataError(format!(
                            "Not a map schema: {}",
                            underlying.type_name()
                        )));
                    };
                    let converted = entries
                        .iter()
                        .map(|(key, entry)| {
                            let Value::String(key) = key else {
                                return Err(DataError(format!(
                                    "Invalid type for MAP: {}",
                                    java_class(key)
                                )));
                            };
                            Ok((
                                key.clone(),
                                self.datum(
                                    schema.value_schema.as_deref(),
                                    avro,
                                    values,
                                    entry,
                                    true,
                                )?,
                            ))
                        })
                        .collect::<Result<_, DataError>>()?;
                    return Ok(AvroValue::Map(converted));
                }
                let (entry_avro, entry_node) = match schema {
                    Some(schema) => {
                        let underlying = underlying_map_entry(schema, avro, node)?;
                        let AvroKind::Array(items) = &underlying.kind else {
                            return Err(DataError(format!(
                                "Not an array schema: {}",
                                underlying.type_name()
                            )));
                        };
                        (avro, avro.resolve(items)?)
                    }
                    None => {
                        let anything = anything_schema();
                        (
                            anything,
                            anything
                                .named
                                .get("io.confluent.connect.avro.MapEntry")
                                .expect("Anything defines MapEntry"),
                        )
                    }
                };
                let AvroKind::Record(entry_record) = &entry_node.kind else {
                    return Err(DataError("A map entry is not a record".into()));
                };
                let field = |name: &str| {
                    entry_record
                        .fields
                        .iter()
                        .find(|f| f.name == name)
                        .map(|f| &f.schema)
                        .ok_or_else(|| DataError(format!("Map entry has no {name} field")))
                };
                let (key_node, value_node) = (field(KEY_FIELD)?, field(VALUE_FIELD)?);
                let key_schema = schema.and_then(|s| s.key_schema.as_deref());
                let value_schema = schema.and_then(|s| s.value_schema.as_deref());
                let converted = entries
                    .iter()
                    .map(|(key, entry)| {
                        Ok(AvroValue::Record(AvroRecord {
                            schema_name: entry_record.name.full(),
                            values: vec![
                                self.datum(key_schema, entry_avro, key_node, key, true)?,
                                self.datum(value_schema, entry_avro, value_node, entry, true)?,
                            ],
                        }))
                    })
                    .collect::<Result<_, DataError>>()?;
                wrap("map", AvroValue::Array(converted))
            }
            Type::Struct => {
                let Value::Struct(s) = value else {
                    return Err(mismatch());
                };
                let schema = schema.expect("a schemaless struct was refused above");
                if *s.schema != *schema {
                    return Err(DataError("Mismatching struct schema".into()));
                }
                if is_union_schema(schema) {
                    for field in &schema.fields {
                        let field_value = self.struct_field(s, field);
                        if !field_value.is_null() {
                            return self.datum(Some(&field.schema), avro, node, field_value, true);
                        }
                    }
                    return self.datum(Some(schema), avro, node, &Value::Null, true);
                }
                let underlying = self.underlying_if_optional(schema, avro, node)?;
                let AvroKind::Record(record) = &underlying.kind else {
                    return Err(DataError(format!(
                        "Not a record schema: {}",
                        underlying.type_name()
                    )));
                };
                let mut values = vec![AvroValue::Null; record.fields.len()];
                for field in &schema.fields {
                    let name = self.scrub(&field.name);
                    let Some(position) = record.fields.iter().position(|f| f.name == name) else {
                        return Err(DataError(format!("Not a valid schema field: {name}")));
                    };
                    let field_value = self.struct_field(s, field);
                    values[position] = self.datum(
                        Some(&field.schema),
                        avro,
                        &record.fields[position].schema,
                        field_value,
                        true,
                    )?;
                }
                AvroValue::Record(AvroRecord {
                    schema_name: record.name.full(),
                    values,
                })
            }
        })
    }

    /// A struct's field as written: its default for a null, unless
    /// `ignore.default.for.nullables`.
    fn struct_field<'a>(&self, s: &'a Struct, field: &'a crate::data::Field) -> &'a Value {
        let raw = &s.values[field.index];
        if raw.is_null()
            && !self.config.ignore_default_for_nullables
            && let Some(default) = default_of(&field.schema)
        {
            return default;
        }
        raw
    }

    fn fixed_datum(
        &self,
        schema: &Schema,
        avro: &AvroSchema,
        node: &AvroNode,
        bytes: &[u8],
    ) -> Result<AvroValue, DataError> {
        let size = fixed_size(schema)?;
        let node = avro.resolve(node)?;
        let fixed = match &node.kind {
            AvroKind::Union(branches) => {
                let wanted = union_member_field_name_of_connect(schema);
                let mut found = None;
                for branch in branches {
                    let branch = avro.resolve(branch)?;
                    if let AvroKind::Fixed(f) = &branch.kind
                        && f.size == size
                        && f.name.name == wanted
                    {
                        found = Some(f);
                    }
                }
                found.ok_or_else(|| {
                    DataError(format!(
                        "Fixed size {size} not in union {}",
                        AvroSchema::from_root(node.clone())
                            .to_json()
                            .unwrap_or_default()
                    ))
                })?
            }
            AvroKind::Fixed(f) => f,
            _ => {
                return Err(DataError(format!(
                    "Not a fixed schema: {}",
                    node.type_name()
                )));
            }
        };
        let bytes = if schema
            .name
            .as_deref()
            .is_some_and(|n| n.eq_ignore_ascii_case(DECIMAL))
        {
            pad_to_fixed_size(bytes, size)?
        } else {
            bytes.to_vec()
        };
        Ok(AvroValue::Fixed {
            schema_name: fixed.name.full(),
            bytes,
        })
    }

    fn string_keyed_map(&self, schema: &Schema) -> bool {
        schema.key_schema.as_ref().is_some_and(|k| {
            k.ty == Type::String && (!k.optional || self.config.allow_optional_map_keys)
        })
    }

    /// `avroSchemaForUnderlyingTypeIfOptional`: the non-null branch of an optional
    /// schema's union that is this schema.
    fn underlying_if_optional<'a>(
        &self,
        schema: &Schema,
        avro: &'a AvroSchema,
        node: &'a AvroNode,
    ) -> Result<&'a AvroNode, DataError> {
        let node = avro.resolve(node)?;
        if !schema.optional {
            return Ok(node);
        }
        let AvroKind::Union(branches) = &node.kind else {
            return Err(DataError(format!(
                "An optional schema should have an Avro Union type, not {}",
                java_type_name(schema.ty)
            )));
        };
        for branch in branches {
            let branch = avro.resolve(branch)?;
            if !matches!(branch.kind, AvroKind::Null) && self.cross_reference_names(schema, branch)
            {
                return Ok(branch);
            }
        }
        Ok(node)
    }

    /// `crossReferenceSchemaNames`.
    fn cross_reference_names(&self, schema: &Schema, branch: &AvroNode) -> bool {
        let branch_full = branch
            .full_name()
            .unwrap_or_else(|| branch.type_name().to_string());
        let scrubbed = schema.name.as_deref().map(|n| self.scrub_full_name(n));
        scrubbed.as_deref() == Some(branch_full.as_str())
            || branch.type_name() == connect_type_name(schema.ty)
            || (schema.name.is_none() && branch_full.starts_with(DEFAULT_SCHEMA_FULL_NAME))
    }
}

/// `avroSchemaForUnderlyingMapEntryType`.
fn underlying_map_entry<'a>(
    schema: &Schema,
    avro: &'a AvroSchema,
    node: &'a AvroNode,
) -> Result<&'a AvroNode, DataError> {
    let node = avro.resolve(node)?;
    if !schema.optional {
        return Ok(node);
    }
    let AvroKind::Union(branches) = &node.kind else {
        return Err(DataError(format!(
            "An optional schema should have an Avro Union type, not {}",
            java_type_name(schema.ty)
        )));
    };
    for branch in branches {
        let branch = avro.resolve(branch)?;
        if matches!(branch.kind, AvroKind::Array(_)) {
            return Ok(branch);
        }
    }
    Ok(node)
}

/// Connect's `Schema.Type.getName()`.
fn connect_type_name(ty: Type) -> &'static str {
    match ty {
        Type::Int8 => "int8",
        Type::Int16 => "int16",
        Type::Int32 => "int32",
        Type::Int64 => "int64",
        Type::Float32 => "float32",
        Type::Float64 => "float64",
        Type::Boolean => "boolean",
        Type::String => "string",
        Type::Bytes => "bytes",
        Type::Array => "array",
        Type::Map => "map",
        Type::Struct => "struct",
    }
}

/// An `Anything` record with at most one field set.
fn anything(set: Option<(&str, AvroValue)>) -> AvroValue {
    let mut values = vec![AvroValue::Null; ANYTHING_FIELDS.len()];
    if let Some((field, value)) = set {
        let position = ANYTHING_FIELDS
            .iter()
            .position(|f| *f == field)
            .expect("an Anything field");
        values[position] = value;
    }
    AvroValue::Record(AvroRecord {
        schema_name: AVRO_TYPE_ANYTHING.into(),
        values,
    })
}

/// `schemaTypeForSchemalessJavaType`: none for null.
fn schemaless_type(value: &Value) -> Result<Option<Type>, DataError> {
    Ok(Some(match value {
        Value::Null => return Ok(None),
        Value::Int8(_) => Type::Int8,
        Value::Int16(_) => Type::Int16,
        Value::Int32(_) => Type::Int32,
        Value::Int64(_) => Type::Int64,
        Value::Float32(_) => Type::Float32,
        Value::Float64(_) => Type::Float64,
        Value::Boolean(_) => Type::Boolean,
        Value::String(_) => Type::String,
        Value::Array(_) => Type::Array,
        Value::Map(_) => Type::Map,
        // Confluent lists neither byte arrays nor structs among schemaless types.
        other @ (Value::Bytes(_) | Value::Struct(_)) => {
            return Err(DataError(format!(
                "Unknown Java type for schemaless data: {}",
                java_class(other)
            )));
        }
    }))
}

/// A schema's default; a default of null is no default.
fn default_of(schema: &Schema) -> Option<&Value> {
    schema.default.as_ref().filter(|d| !d.is_null())
}

fn is_union_schema(schema: &Schema) -> bool {
    schema.name.as_deref() == Some(AVRO_TYPE_UNION)
}

fn is_fixed_schema(schema: &Schema) -> bool {
    schema.ty == Type::Bytes
        && schema.name.is_some()
        && schema.parameters.contains_key(CONNECT_AVRO_FIXED_SIZE_PROP)
}

fn fixed_size(schema: &Schema) -> Result<usize, DataError> {
    let size = schema
        .parameters
        .get(CONNECT_AVRO_FIXED_SIZE_PROP)
        .map(String::as_str)
        .unwrap_or("");
    size.parse()
        .map_err(|_| DataError(format!("For input string: \"{size}\"")))
}

/// `unionMemberFieldName(Schema)` of a Connect schema: a struct's, enum's or fixed's
/// simple name, otherwise its Avro type's name.
fn union_member_field_name_of_connect(schema: &Schema) -> String {
    if schema.ty == Type::Struct || is_fixed_schema(schema) {
        let name = schema.name.as_deref().unwrap_or("");
        return name.rsplit('.').next().unwrap_or(name).to_string();
    }
    match schema.ty {
        Type::Int32 => "int",
        Type::Int64 => "long",
        Type::Float32 => "float",
        Type::Float64 => "double",
        Type::Boolean => "boolean",
        Type::String => "string",
        Type::Bytes => "bytes",
        Type::Array => "array",
        Type::Map => "map",
        other => connect_type_name(other),
    }
    .to_string()
}

/// `unionMemberFieldName(org.apache.avro.Schema)`.
fn union_member_field_name(node: &AvroNode) -> String {
    match &node.kind {
        AvroKind::Record(r) => r.name.name.clone(),
        AvroKind::Enum(e) => e.name.name.clone(),
        AvroKind::Fixed(f) => f.name.name.clone(),
        _ => node.type_name().to_string(),
    }
}

/// `padToFixedSize`: sign-extends an unscaled decimal to a fixed type's size.
fn pad_to_fixed_size(unscaled: &[u8], size: usize) -> Result<Vec<u8>, DataError> {
    if unscaled.len() > size {
        return Err(DataError(format!(
            "Unscaled value byte array length {} is greater than fixed size {size}",
            unscaled.len()
        )));
    }
    let sign = if unscaled.first().is_some_and(|b| b & 0x80 != 0) {
        0xff
    } else {
        0
    };
    let mut padded = vec![sign; size - unscaled.len()];
    padded.extend_from_slice(unscaled);
    Ok(padded)
}

/// `doScrubName`: a valid Avro name from any name (URL-encoded, then every character
/// that is not a letter, digit or underscore replaced by `_`, and an `x` before a
/// leading digit).
pub(crate) fn scrub_name(name: &str) -> String {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if name.is_empty()
        || (name.chars().all(valid) && !name.starts_with(|c: char| c.is_ascii_digit()))
    {
        return name.to_string();
    }
    // URLEncoder.encode: unreserved characters stay, a space is '+', the rest %XX of
    // UTF-8 (all of which become '_' below).
    let mut encoded = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '*' | '_') {
            encoded.push(c);
        } else if c == ' ' {
            encoded.push('+');
        } else {
            let mut buffer = [0u8; 4];
            for byte in c.encode_utf8(&mut buffer).bytes() {
                encoded.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    if encoded.starts_with(|c: char| c.is_ascii_digit()) {
        encoded.insert(0, 'x');
    }
    encoded
        .chars()
        .map(|c| if valid(c) { c } else { '_' })
        .collect()
}

/// Connect's logical value as the value Avro writes (`toAvroLogical`): a Decimal's
/// unscaled bytes made minimal, a Time checked to be within its day. None when the
/// schema is not a logical type.
fn to_avro_logical(schema: &Schema, value: &Value) -> Result<Option<Value>, DataError> {
    let expected = |logical: &str| {
        DataError(format!(
            "Invalid type for {logical}, expected {} but was {}",
            if logical == "Decimal" {
                "BigDecimal"
            } else {
                "Date"
            },
            java_class(value)
        ))
    };
    Ok(Some(match schema.name.as_deref() {
        Some(DECIMAL) => match value {
            Value::Bytes(bytes) => {
                let unscaled = BigInteger::from_twos_complement(bytes)
                    .ok_or_else(|| DataError("Zero length BigInteger".into()))?;
                Value::Bytes(unscaled.to_twos_complement())
            }
            _ => return Err(expected("Decimal")),
        },
        Some(DATE) => match value {
            Value::Int32(_) => return Ok(None),
            _ => return Err(expected("Date")),
        },
        Some(TIME) => match value {
            Value::Int32(millis) if *millis >= 0 && i64::from(*millis) <= MILLIS_PER_DAY => {
                return Ok(None);
            }
            Value::Int32(_) => {
                return Err(DataError(
                    "Kafka Connect Time type should not have any date fields set to non-zero values.".into(),
                ));
            }
            _ => return Err(expected("Time")),
        },
        Some(TIMESTAMP) => match value {
            Value::Int64(_) => return Ok(None),
            _ => return Err(expected("Timestamp")),
        },
        _ => return Ok(None),
    }))
}

/// `toConnectLogical`: a Decimal's bytes made minimal, a Time checked.
fn to_connect_logical(schema: &Schema, value: Value) -> Result<Value, DataError> {
    match (schema.name.as_deref(), value) {
        (_, Value::Null) => Ok(Value::Null),
        (Some(DECIMAL), Value::Bytes(bytes)) => {
            let unscaled = BigInteger::from_twos_complement(&bytes)
                .ok_or_else(|| DataError("Zero length BigInteger".into()))?;
            Ok(Value::Bytes(unscaled.to_twos_complement()))
        }
        (Some(DECIMAL), other) => Err(DataError(format!(
            "Invalid type for Decimal, underlying representation should be bytes but was {}",
            java_class(&other)
        ))),
        (Some(DATE), v @ Value::Int32(_)) => Ok(v),
        (Some(DATE), other) => Err(DataError(format!(
            "Invalid type for Date, underlying representation should be int32 but was {}",
            java_class(&other)
        ))),
        (Some(TIME), Value::Int32(millis)) => {
            if millis < 0 || i64::from(millis) > MILLIS_PER_DAY {
                return Err(DataError(
                    "Time values must use number of milliseconds greater than 0 and less than 86400000".into(),
                ));
            }
            Ok(Value::Int32(millis))
        }
        (Some(TIME), other) => Err(DataError(format!(
            "Invalid type for Time, underlying representation should be int32 but was {}",
            java_class(&other)
        ))),
        (Some(TIMESTAMP), v @ Value::Int64(_)) => Ok(v),
        (Some(TIMESTAMP), other) => Err(DataError(format!(
            "Invalid type for Timestamp, underlying representation should be int64 but was {}",
            java_class(&other)
        ))),
        (_, other) => Ok(other),
    }
}

/// The state of one Connect → Avro schema conversion (`FromConnectContext`).
struct FromConnect<'a> {
    data: &'a AvroData,
    /// Non-optional Connect schemas converted so far: the same schema met again is the
    /// same Avro schema (so a struct used twice is one record, named the second time).
    schema_map: Vec<(Schema, AvroNode)>,
    /// Records by Connect name.
    cycle_references: Vec<(String, AvroNode)>,
    /// Full names of the named Connect schemas of fields so far.
    seen_named_types: HashSet<String>,
    /// Unnamed records so far (`ConnectDefault`, `ConnectDefault2`, ...).
    name_index: u32,
}

impl FromConnect<'_> {
    fn schema(&mut self, schema: &Schema, ignore_optional: bool) -> Result<AvroNode, DataError> {
        if !is_union_schema(schema)
            && !schema.optional
            && let Some((_, cached)) = self.schema_map.iter().find(|(s, _)| s == schema)
        {
            return Ok(cached.clone());
        }
        let config = &self.data.config;
        let mut connect_type = None;
        let mut base = match schema.ty {
            Type::Int8 => {
                connect_type = Some("int8");
                AvroNode::new(AvroKind::Int)
            }
            Type::Int16 => {
                connect_type = Some("int16");
                AvroNode::new(AvroKind::Int)
            }
            Type::Int32 => AvroNode::new(AvroKind::Int),
            Type::Int64 => AvroNode::new(AvroKind::Long),
            Type::Float32 => AvroNode::new(AvroKind::Float),
            Type::Float64 => AvroNode::new(AvroKind::Double),
            Type::Boolean => AvroNode::new(AvroKind::Boolean),
            Type::String => AvroNode::new(AvroKind::String),
            Type::Bytes => {
                let mut base = if is_fixed_schema(schema) {
                    let name = self.name_or_default(schema.name.as_deref());
                    AvroNode::new(AvroKind::Fixed(Arc::new(super::avro_schema::FixedType {
                        name,
                        doc: None,
                        size: fixed_size(schema)?,
                        aliases: Vec::new(),
                    })))
                } else {
                    AvroNode::new(AvroKind::Bytes)
                };
                if schema
                    .name
                    .as_deref()
                    .is_some_and(|n| n.eq_ignore_ascii_case(DECIMAL))
                {
                    base.add_prop(
                        "scale",
                        JsonNode::Int(parse_int_parameter(schema, DECIMAL_SCALE)?),
                    )?;
                    let precision = match schema.parameters.get(CONNECT_AVRO_DECIMAL_PRECISION_PROP)
                    {
                        Some(_) => {
                            parse_int_parameter(schema, CONNECT_AVRO_DECIMAL_PRECISION_PROP)?
                        }
                        None => CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT,
                    };
                    base.add_prop("precision", JsonNode::Int(precision))?;
                }
                base
            }
            Type::Array => {
                let element = schema
                    .value_schema
                    .as_deref()
                    .ok_or_else(|| DataError("Array schema has no value schema".into()))?;
                AvroNode::new(AvroKind::Array(Box::new(
                    self.schema_with_cycle(element, false)?,
                )))
            }
            Type::Map => {
                let key = schema
                    .key_schema
                    .as_deref()
                    .ok_or_else(|| DataError("Map schema has no key schema".into()))?;
                let value = schema
                    .value_schema
                    .as_deref()
                    .ok_or_else(|| DataError("Map schema has no value schema".into()))?;
                if self.data.string_keyed_map(schema) {
                    AvroNode::new(AvroKind::Map(Box::new(
                        self.schema_with_cycle(value, false)?,
                    )))
                } else {
                    // Avro maps have string keys: other maps are arrays of entries.
                    let (name, props) = match &schema.name {
                        None => (Name::new(MAP_ENTRY_TYPE_NAME, Some(NAMESPACE)), Vec::new()),
                        Some(name) => (
                            self.name_or_default(Some(name)),
                            vec![(
                                CONNECT_INTERNAL_TYPE_NAME.to_string(),
                                JsonNode::Text(MAP_ENTRY_TYPE_NAME.into()),
                            )],
                        ),
                    };
                    let fields = vec![
                        self.record_field(KEY_FIELD, key, None)?,
                        self.record_field(VALUE_FIELD, value, None)?,
                    ];
                    let record = AvroNode {
                        kind: AvroKind::Record(Arc::new(RecordType {
                            name,
                            doc: None,
                            fields,
                            aliases: Vec::new(),
                        })),
                        props,
                    };
                    AvroNode::new(AvroKind::Array(Box::new(record)))
                }
            }
            Type::Struct => {
                if is_union_schema(schema) {
                    let mut branches = Vec::new();
                    if schema.optional {
                        branches.push(AvroNode::new(AvroKind::Null));
                    }
                    for field in &schema.fields {
                        branches.push(self.schema_with_cycle(&non_optional(&field.schema), true)?);
                    }
                    AvroNode::new(AvroKind::Union(branches))
                } else if schema.optional {
                    let record = self.schema_with_cycle(&non_optional(schema), false)?;
                    AvroNode::new(AvroKind::Union(vec![AvroNode::new(AvroKind::Null), record]))
                } else {
                    let name = self.name_or_default(schema.name.as_deref());
                    let doc = schema.parameters.get(AVRO_RECORD_DOC_PROP).cloned();
                    let mut fields = Vec::with_capacity(schema.fields.len());
                    for field in &schema.fields {
                        let field_name = self.data.scrub(&field.name).into_owned();
                        let field_doc = schema
                            .parameters
                            .get(&format!("{AVRO_FIELD_DOC_PREFIX_PROP}{}", field.name))
                            .cloned();
                        fields.push(self.record_field(&field_name, &field.schema, field_doc)?);
                    }
                    let record = AvroNode::new(AvroKind::Record(Arc::new(RecordType {
                        name,
                        doc,
                        fields,
                        aliases: Vec::new(),
                    })));
                    if let Some(name) = &schema.name {
                        self.cycle_references.push((name.clone(), record.clone()));
                    }
                    record
                }
            }
        };
        let result = if matches!(base.kind, AvroKind::Union(_)) {
            // Avro unions carry no properties: the metadata is on the branches.
            base
        } else {
            if config.connect_meta_data {
                if let Some(doc) = &schema.doc {
                    base.add_prop(CONNECT_DOC_PROP, JsonNode::Text(doc.clone()))?;
                }
                if let Some(version) = schema.version {
                    base.add_prop(CONNECT_VERSION_PROP, JsonNode::Int(version))?;
                }
                let parameters = parameters_from_connect(schema);
                if parameters.size() > 0 {
                    base.add_prop(CONNECT_PARAMETERS_PROP, parameters)?;
                }
                if let Some(default) = default_of(schema)
                    && !schema.parameters.contains_key(AVRO_FIELD_DEFAULT_FLAG_PROP)
                {
                    base.add_prop(
                        CONNECT_DEFAULT_VALUE_PROP,
                        self.default_value_from_connect(schema, default)?,
                    )?;
                }
                if let Some(name) = &schema.name {
                    base.add_prop(CONNECT_NAME_PROP, JsonNode::Text(name.clone()))?;
                }
                if let Some(connect_type) = connect_type {
                    base.add_prop(CONNECT_TYPE_PROP, JsonNode::Text(connect_type.into()))?;
                }
            }
            let mut force_legacy_decimal = false;
            if let Some(name) = schema.name.as_deref() {
                if name.eq_ignore_ascii_case(DECIMAL) {
                    let precision = match schema.parameters.get(CONNECT_AVRO_DECIMAL_PRECISION_PROP)
                    {
                        Some(_) => {
                            parse_int_parameter(schema, CONNECT_AVRO_DECIMAL_PRECISION_PROP)?
                        }
                        None => CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT,
                    };
                    let scale = match schema.parameters.get(DECIMAL_SCALE) {
                        Some(_) => parse_int_parameter(schema, DECIMAL_SCALE)?,
                        None => 0,
                    };
                    if scale < 0 || scale > precision {
                        // Avro's decimal cannot say this: the legacy property alone says it.
                        force_legacy_decimal = true;
                    } else {
                        add_decimal_logical_type(&mut base, precision, scale)?;
                    }
                } else if name.eq_ignore_ascii_case(TIME) {
                    add_logical_type(
                        &mut base,
                        AVRO_LOGICAL_TIME_MILLIS,
                        AvroKind::Int,
                        "Time (millis)",
                    )?;
                } else if name.eq_ignore_ascii_case(TIMESTAMP) {
                    add_logical_type(
                        &mut base,
                        AVRO_LOGICAL_TIMESTAMP_MILLIS,
                        AvroKind::Long,
                        "Timestamp (millis)",
                    )?;
                } else if name.eq_ignore_ascii_case(DATE) {
                    add_logical_type(&mut base, AVRO_LOGICAL_DATE, AvroKind::Int, "Date")?;
                }
                // The older way, kept by Confluent for compatibility: the same property.
                let legacy = if name.eq_ignore_ascii_case(DECIMAL) {
                    (schema
                        .parameters
                        .contains_key(CONNECT_AVRO_DECIMAL_PRECISION_PROP)
                        || force_legacy_decimal)
                        .then_some(AVRO_LOGICAL_DECIMAL)
                } else if name.eq_ignore_ascii_case(TIME) {
                    Some(AVRO_LOGICAL_TIME_MILLIS)
                } else if name.eq_ignore_ascii_case(TIMESTAMP) {
                    Some(AVRO_LOGICAL_TIMESTAMP_MILLIS)
                } else if name.eq_ignore_ascii_case(DATE) {
                    Some(AVRO_LOGICAL_DATE)
                } else {
                    None
                };
                if let Some(logical) = legacy {
                    base.add_prop(AVRO_LOGICAL_TYPE_PROP, JsonNode::Text(logical.into()))?;
                }
            }
            for (key, value) in &schema.parameters {
                if key.starts_with(AVRO_PROP) {
                    base.add_prop(key, JsonNode::Text(value.clone()))?;
                }
            }
            if ignore_optional {
                base
            } else {
                maybe_make_optional(schema, base)
            }
        };
        if !schema.optional {
            self.schema_map.push((schema.clone(), result.clone()));
            // A record met again by name after its definition is the record as defined,
            // properties included (Java's cycle map holds the same, since mutated,
            // object): the entry made before the properties were added is replaced.
            if schema.ty == Type::Struct
                && let Some(name) = &schema.name
                && let Some(entry) = self
                    .cycle_references
                    .iter_mut()
                    .rev()
                    .find(|(n, _)| n == name)
            {
                entry.1 = result.clone();
            }
        }
        Ok(result)
    }

    fn schema_with_cycle(
        &mut self,
        schema: &Schema,
        ignore_optional: bool,
    ) -> Result<AvroNode, DataError> {
        if let Some(name) = &schema.name
            && let Some((_, record)) = self.cycle_references.iter().find(|(n, _)| n == name)
        {
            let record = record.clone();
            return Ok(if ignore_optional {
                record
            } else {
                maybe_make_optional(schema, record)
            });
        }
        self.schema(schema, ignore_optional)
    }

    /// `getNameOrDefault`.
    fn name_or_default(&mut self, name: Option<&str>) -> Name {
        match name {
            Some(name) => self.data.split_name(name),
            None => {
                self.name_index += 1;
                let suffix = if self.name_index > 1 {
                    self.name_index.to_string()
                } else {
                    String::new()
                };
                Name::new(&format!("{DEFAULT_SCHEMA_NAME}{suffix}"), Some(NAMESPACE))
            }
        }
    }

    /// `addAvroRecordField`.
    fn record_field(
        &mut self,
        name: &str,
        schema: &Schema,
        doc: Option<String>,
    ) -> Result<AvroField, DataError> {
        let default = match default_of(schema) {
            Some(default) => Some(as_field_default(
                self.default_value_from_connect(schema, default)?,
            )),
            None if schema.optional => Some(JsonNode::Null),
            None => None,
        };
        let scrubbed = schema.name.as_deref().map(|n| self.data.scrub_full_name(n));
        let already_seen = scrubbed.is_some_and(|n| !self.seen_named_types.insert(n));
        let avro = self.schema(schema, false)?;
        // Avro refuses a default that does not fit the field: Confluent then writes the
        // field without one.
        let default = default.filter(|d| is_valid_default(&avro, d));
        let mut props = Vec::new();
        if self.data.config.connect_meta_data
            && already_seen
            && !schema.parameters.is_empty()
            && is_named_avro_type(&avro)
        {
            let parameters = parameters_from_connect(schema);
            if parameters.size() > 0 {
                props.push((CONNECT_PARAMETERS_PROP.to_string(), parameters));
            }
        }
        Ok(AvroField {
            name: name.to_string(),
            schema: avro,
            doc,
            default,
            order: None,
            aliases: Vec::new(),
            props,
        })
    }

    /// `defaultValueFromConnect`: a Connect default as Avro's JSON for it.
    fn default_value_from_connect(
        &self,
        schema: &Schema,
        value: &Value,
    ) -> Result<JsonNode, DataError> {
        if value.is_null() {
            return Ok(JsonNode::Null);
        }
        let logical = to_avro_logical(schema, value)?;
        let value = logical.as_ref().unwrap_or(value);
        let invalid = || {
            DataError(format!(
                "Invalid type used for default value of {} field: {}",
                java_type_name(schema.ty),
                java_class(value)
            ))
        };
        Ok(match (schema.ty, value) {
            (Type::Int8, Value::Int8(v)) => JsonNode::Int(i32::from(*v)),
            (Type::Int16, Value::Int16(v)) => JsonNode::Int(i32::from(*v)),
            (Type::Int32, Value::Int32(v)) => JsonNode::Int(*v),
            (Type::Int64, Value::Int64(v)) => JsonNode::Long(*v),
            (Type::Float32, Value::Float32(v)) => JsonNode::Float(*v),
            (Type::Float64, Value::Float64(v)) => JsonNode::Double(*v),
            (Type::Boolean, Value::Boolean(v)) => JsonNode::Boolean(*v),
            (Type::String, Value::String(v)) => JsonNode::Text(v.clone()),
            // Avro's JSON for bytes: each byte as the character of that code.
            (Type::Bytes, Value::Bytes(v)) => {
                JsonNode::Text(v.iter().map(|&b| char::from(b)).collect())
            }
            (Type::Array, Value::Array(items)) => {
                let element = schema.value_schema.as_deref().ok_or_else(invalid)?;
                JsonNode::Array(
                    items
                        .iter()
                        .map(|item| self.default_value_from_connect(element, item))
                        .collect::<Result<_, _>>()?,
                )
            }
            (Type::Map, Value::Map(entries)) => {
                let key_schema = schema.key_schema.as_deref().ok_or_else(invalid)?;
                let value_schema = schema.value_schema.as_deref().ok_or_else(invalid)?;
                if self.data.string_keyed_map(schema) {
                    let mut members = Vec::with_capacity(entries.len());
                    for (key, entry) in entries {
                        let Value::String(key) = key else {
                            return Err(invalid());
                        };
                        let entry = self.default_value_from_connect(value_schema, entry)?;
                        match members
                            .iter_mut()
                            .find(|(k, _): &&mut (String, JsonNode)| k == key)
                        {
                            Some(existing) => existing.1 = entry,
                            None => members.push((key.clone(), entry)),
                        }
                    }
                    JsonNode::Object(members)
                } else {
                    JsonNode::Array(
                        entries
                            .iter()
                            .map(|(key, entry)| {
                                Ok(JsonNode::Array(vec![
                                    self.default_value_from_connect(key_schema, key)?,
                                    self.default_value_from_connect(value_schema, entry)?,
                                ]))
                            })
                            .collect::<Result<_, DataError>>()?,
                    )
                }
            }
            (Type::Struct, Value::Struct(s)) => {
                let union = is_union_schema(schema);
                let mut members = Vec::with_capacity(schema.fields.len());
                for field in &schema.fields {
                    let field_value = s.get(&field.name).unwrap_or(&Value::Null);
                    let field_default =
                        self.default_value_from_connect(&field.schema, field_value)?;
                    if union {
                        return Ok(field_default);
                    }
                    members.push((self.data.scrub(&field.name).into_owned(), field_default));
                }
                JsonNode::Object(members)
            }
            _ => return Err(invalid()),
        })
    }
}

fn parse_int_parameter(schema: &Schema, name: &str) -> Result<i32, DataError> {
    let text = schema.parameters.get(name).map(String::as_str);
    text.and_then(|t| t.parse().ok()).ok_or_else(|| match text {
        Some(t) => DataError(format!("For input string: \"{t}\"")),
        None => DataError("Cannot parse null string: null".into()),
    })
}

/// `LogicalTypes.decimal(precision, scale).addToSchema(schema)`.
fn add_decimal_logical_type(
    node: &mut AvroNode,
    precision: i32,
    scale: i32,
) -> Result<(), DataError> {
    match &node.kind {
        AvroKind::Bytes => {}
        AvroKind::Fixed(f) => {
            let max = ((2f64.powi(8 * f.size as i32 - 1) - 1.0).log10()).floor();
            if f64::from(precision) > max {
                return Err(DataError(format!(
                    "fixed({}) cannot store {precision} digits (max {max})",
                    f.size
                )));
            }
        }
        _ => {
            return Err(DataError(
                "Logical type decimal must be backed by fixed or bytes".into(),
            ));
        }
    }
    if precision <= 0 {
        return Err(DataError(format!(
            "Invalid decimal precision: {precision} (must be positive)"
        )));
    }
    node.add_prop(
        AVRO_LOGICAL_TYPE_PROP,
        JsonNode::Text(AVRO_LOGICAL_DECIMAL.into()),
    )?;
    node.add_prop("precision", JsonNode::Int(precision))?;
    node.add_prop("scale", JsonNode::Int(scale))
}

fn add_logical_type(
    node: &mut AvroNode,
    logical: &str,
    base: AvroKind,
    what: &str,
) -> Result<(), DataError> {
    if node.kind != base {
        let base_name = AvroNode::new(base).type_name();
        return Err(DataError(format!(
            "{what} can only be used with an underlying {base_name} type"
        )));
    }
    node.add_prop(AVRO_LOGICAL_TYPE_PROP, JsonNode::Text(logical.into()))
}

/// `maybeMakeOptional`: `["null", T]`, or `[T, "null"]` when the schema has a default
/// (Avro's default must match the union's first branch).
fn maybe_make_optional(schema: &Schema, base: AvroNode) -> AvroNode {
    if !schema.optional {
        return base;
    }
    let null = AvroNode::new(AvroKind::Null);
    let branches = if default_of(schema).is_some() {
        vec![base, null]
    } else {
        vec![null, base]
    };
    AvroNode::new(AvroKind::Union(branches))
}

/// `nonOptional`: the same schema, required.
fn non_optional(schema: &Schema) -> Schema {
    let mut copy = schema.clone();
    copy.optional = false;
    copy
}

/// `parametersFromConnect`: the parameters, less the field-default flag.
fn parameters_from_connect(schema: &Schema) -> JsonNode {
    JsonNode::Object(
        schema
            .parameters
            .iter()
            .filter(|(k, _)| k.as_str() != AVRO_FIELD_DEFAULT_FLAG_PROP)
            .map(|(k, v)| (k.clone(), JsonNode::Text(v.clone())))
            .collect(),
    )
}

fn is_named_avro_type(node: &AvroNode) -> bool {
    match &node.kind {
        AvroKind::Record(_) | AvroKind::Enum(_) | AvroKind::Fixed(_) => true,
        AvroKind::Union(branches) => branches.iter().any(|b| {
            matches!(
                b.kind,
                AvroKind::Record(_) | AvroKind::Enum(_) | AvroKind::Fixed(_)
            )
        }),
        _ => false,
    }
}

/// A field default as Avro keeps it (`JacksonUtils.toObject` then `toJsonNode`): a
/// float becomes a double.
fn as_field_default(node: JsonNode) -> JsonNode {
    match node {
        JsonNode::Float(v) => JsonNode::Double(f64::from(v)),
        JsonNode::Array(items) => {
            JsonNode::Array(items.into_iter().map(as_field_default).collect())
        }
        JsonNode::Object(members) => JsonNode::Object(
            members
                .into_iter()
                .map(|(k, v)| (k, as_field_default(v)))
                .collect(),
        ),
        other => other,
    }
}

/// `Schema.isValidDefault`, as Avro 1.12 checks a field's default (a union's default may
/// match any branch).
fn is_valid_default(node: &AvroNode, default: &JsonNode) -> bool {
    match &node.kind {
        AvroKind::String | AvroKind::Bytes | AvroKind::Enum(_) | AvroKind::Fixed(_) => {
            default.text_value().is_some()
        }
        AvroKind::Int => match default {
            JsonNode::Int(_) => true,
            JsonNode::Long(v) => i32::try_from(*v).is_ok(),
            _ => false,
        },
        AvroKind::Long => matches!(default, JsonNode::Int(_) | JsonNode::Long(_)),
        AvroKind::Float | AvroKind::Double => default.is_number(),
        AvroKind::Boolean => matches!(default, JsonNode::Boolean(_)),
        AvroKind::Null => default.is_null(),
        AvroKind::Array(items) => {
            matches!(default, JsonNode::Array(_))
                && default
                    .elements()
                    .into_iter()
                    .all(|e| is_valid_default(items, e))
        }
        AvroKind::Map(values) => {
            matches!(default, JsonNode::Object(_))
                && default
                    .elements()
                    .into_iter()
                    .all(|e| is_valid_default(values, e))
        }
        AvroKind::Union(branches) => branches.iter().any(|b| is_valid_default(b, default)),
        AvroKind::Record(record) => {
            matches!(default, JsonNode::Object(_))
                && record.fields.iter().all(|field| {
                    match default.get(&field.name).or(field.default.as_ref()) {
                        Some(value) => is_valid_default(&field.schema, value),
                        None => false,
                    }
                })
        }
        // A generated schema has no references; a default naming one is not checked.
        AvroKind::Reference(_) => true,
    }
}

/// The state of one Avro → Connect schema conversion.
struct ToConnect<'a> {
    data: &'a AvroData,
    avro: &'a AvroSchema,
    /// Records being converted, by full name: meeting one again is a recursive schema.
    records_open: Vec<String>,
}

impl ToConnect<'_> {
    fn schema(
        &mut self,
        node: &AvroNode,
        force_optional: bool,
        field_default: Option<&JsonNode>,
        version: Option<i32>,
    ) -> Result<Schema, DataError> {
        let node = self.avro.resolve(node)?;
        let config = &self.data.config;
        let connect_type = node.text_prop(CONNECT_TYPE_PROP);
        let logical_type = node.text_prop(AVRO_LOGICAL_TYPE_PROP);
        let mut builder = match &node.kind {
            AvroKind::Boolean => Schema::new(Type::Boolean),
            AvroKind::Bytes | AvroKind::Fixed(_) => {
                let mut builder = if logical_type
                    .is_some_and(|l| l.eq_ignore_ascii_case(AVRO_LOGICAL_DECIMAL))
                {
                    // In Avro the scale is optional and defaults to 0.
                    let scale = node
                        .prop("scale")
                        .filter(|s| s.is_number())
                        .map_or(0, JsonNode::int_value);
                    let mut builder = Schema::decimal(scale);
                    if let Some(precision) = node.prop("precision") {
                        if !precision.is_number() {
                            return Err(DataError(
                                "precision property must be a JSON Integer. https://avro.apache.org/docs/1.9.1/spec.html#Decimal".into(),
                            ));
                        }
                        let precision = precision.int_value();
                        if precision != CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT {
                            builder = builder.with_parameter(
                                CONNECT_AVRO_DECIMAL_PRECISION_PROP,
                                precision.to_string(),
                            );
                        }
                    }
                    builder
                } else {
                    Schema::new(Type::Bytes)
                };
                if let AvroKind::Fixed(f) = &node.kind {
                    builder =
                        builder.with_parameter(CONNECT_AVRO_FIXED_SIZE_PROP, f.size.to_string());
                }
                builder
            }
            AvroKind::Double => Schema::new(Type::Float64),
            AvroKind::Float => Schema::new(Type::Float32),
            AvroKind::Int => match (connect_type, logical_type) {
                (None, None) => Schema::new(Type::Int32),
                (_, Some(logical)) if logical.eq_ignore_ascii_case(AVRO_LOGICAL_DATE) => {
                    Schema::date()
                }
                (_, Some(logical)) if logical.eq_ignore_ascii_case(AVRO_LOGICAL_TIME_MILLIS) => {
                    Schema::time()
                }
                (_, Some(_)) => Schema::new(Type::Int32),
                (Some("int8"), None) => Schema::new(Type::Int8),
                (Some("int16"), None) => Schema::new(Type::Int16),
                (Some(_), None) => {
                    return Err(DataError(
                        "Connect type annotation for Avro int field is null".into(),
                    ));
                }
            },
            AvroKind::Long => {
                if logical_type
                    .is_some_and(|l| l.eq_ignore_ascii_case(AVRO_LOGICAL_TIMESTAMP_MILLIS))
                {
                    Schema::timestamp()
                } else {
                    Schema::new(Type::Int64)
                }
            }
            AvroKind::String => Schema::new(Type::String),
            AvroKind::Array(items) => {
                let items = self.avro.resolve(items)?;
                match self.map_entry(items)? {
                    Some((key, value)) => {
                        // Confluent converts an entry's key and value afresh, without
                        // defaults or versions.
                        let key = self.schema(&key.clone(), false, None, None)?;
                        let value = self.schema(&value.clone(), false, None, None)?;
                        Schema::map(key, value)
                    }
                    None => Schema::array(self.schema(items, false, None, None)?),
                }
            }
            AvroKind::Map(values) => Schema::map(
                Schema::new(Type::String),
                self.schema(values, false, None, None)?,
            ),
            AvroKind::Record(record) => {
                let full = record.name.full();
                if self.records_open.contains(&full) {
                    return Err(DataError(format!(
                        "Recursive Avro schemas are not supported: {full} refers to itself"
                    )));
                }
                self.records_open.push(full);
                let mut builder = Schema::new(Type::Struct);
                if config.connect_meta_data
                    && let Some(doc) = &record.doc
                {
                    builder = builder.with_parameter(AVRO_RECORD_DOC_PROP, doc.clone());
                }
                for field in &record.fields {
                    if config.connect_meta_data
                        && let Some(doc) = &field.doc
                    {
                        builder = builder.with_parameter(
                            format!("{AVRO_FIELD_DOC_PREFIX_PROP}{}", field.name),
                            doc.clone(),
                        );
                    }
                    let mut field_schema =
                        self.schema(&field.schema, false, field.default.as_ref(), None)?;
                    if config.connect_meta_data
                        && let Some((_, JsonNode::Object(parameters))) = field
                            .props
                            .iter()
                            .find(|(k, _)| k == CONNECT_PARAMETERS_PROP)
                    {
                        for (key, value) in parameters {
                            let value = match value {
                                JsonNode::Text(t) => t.clone(),
                                other => jackson::write_string(other),
                            };
                            field_schema.parameters.insert(key.clone(), value);
                        }
                    }
                    builder = builder.field(field.name.clone(), field_schema);
                }
                self.records_open.pop();
                builder
            }
            AvroKind::Enum(e) => {
                // Enums are strings; the enum is kept in parameters.
                let mut builder = Schema::new(Type::String);
                if config.connect_meta_data {
                    if let Some(doc) = &e.doc {
                        builder = builder.with_parameter(
                            format!("{AVRO_ENUM_DOC_PREFIX_PROP}{}", e.name.name),
                            doc.clone(),
                        );
                    }
                    if let Some(default) = &e.default {
                        builder = builder.with_parameter(
                            format!("{AVRO_ENUM_DEFAULT_PREFIX_PROP}{}", e.name.name),
                            default.clone(),
                        );
                    }
                }
                builder = builder.with_parameter(AVRO_TYPE_ENUM, e.name.full());
                for symbol in &e.symbols {
                    builder = builder
                        .with_parameter(format!("{AVRO_TYPE_ENUM}.{symbol}"), symbol.clone());
                }
                builder
            }
            AvroKind::Union(branches) => {
                if branches.len() == 1 && config.flatten_singleton_unions {
                    return self.schema(&branches[0], false, None, None);
                }
                let plain_null = AvroNode::new(AvroKind::Null);
                if branches.len() == 2 && branches.contains(&plain_null) {
                    let member = branches
                        .iter()
                        .find(|b| **b != plain_null)
                        .expect("two branches, one null");
                    return self.schema(member, true, None, None);
                }
                let mut builder = Schema::new(Type::Struct).named(AVRO_TYPE_UNION);
                let mut names = HashSet::new();
                for branch in branches {
                    let branch = self.avro.resolve(branch)?;
                    if matches!(branch.kind, AvroKind::Null) {
                        builder.optional = true;
                        continue;
                    }
                    let name = union_member_field_name(branch);
                    if !names.insert(name.clone()) {
                        return Err(DataError(
                            "Multiple union schemas map to the Connect union field name".into(),
                        ));
                    }
                    let member = self.schema(branch, true, None, None)?;
                    builder = builder.field(name, member);
                }
                builder
            }
            AvroKind::Null => {
                return Err(DataError(
                    "Standalone null schemas are not supported by this converter".into(),
                ));
            }
            AvroKind::Reference(_) => unreachable!("references are resolved"),
        };

        if config.connect_meta_data
            && let Some(doc) = node.text_prop(CONNECT_DOC_PROP)
        {
            builder.doc = Some(doc.to_string());
        }

        // A version Connect wrote wins over the registry's.
        let version = match node.prop(CONNECT_VERSION_PROP) {
            Some(found) if found.is_number() => Some(found.int_value()),
            Some(found) => {
                return Err(DataError(format!(
                    "Invalid Connect version found: {}",
                    jackson::write_string(found)
                )));
            }
            None => version,
        };
        if let Some(version) = version.filter(|v| *v >= 0) {
            match builder.version {
                Some(existing) if existing != version => {
                    return Err(DataError(format!(
                        "Mismatched versions: version already added to SchemaBuilder ({existing}) differs from version in source schema ({version})"
                    )));
                }
                _ => builder.version = Some(version),
            }
        }

        if config.connect_meta_data
            && let Some(parameters) = node.prop(CONNECT_PARAMETERS_PROP)
        {
            let JsonNode::Object(parameters) = parameters else {
                return Err(DataError(format!(
                    "Expected JSON object for schema parameters but found: {}",
                    jackson::write_string(parameters)
                )));
            };
            for (key, value) in parameters {
                let Some(value) = value.text_value() else {
                    return Err(DataError(format!(
                        "Expected schema parameter values to be strings but found: {}",
                        jackson::write_string(value)
                    )));
                };
                builder.parameters.insert(key.clone(), value.to_string());
            }
        }
        for (key, value) in &node.props {
            if key.starts_with(AVRO_PROP) {
                let value = match value {
                    JsonNode::Text(t) => t.clone(),
                    other => jackson::write_string(other),
                };
                builder.parameters.insert(key.clone(), value);
            }
        }

        let connect_default = node.prop(CONNECT_DEFAULT_VALUE_PROP);
        let default = match field_default {
            None => connect_default,
            Some(field_default) => {
                if config.connect_meta_data && connect_default.is_none() {
                    builder
                        .parameters
                        .insert(AVRO_FIELD_DEFAULT_FLAG_PROP.into(), "true".into());
                }
                Some(field_default)
            }
        };
        if let Some(default) = default {
            // Confluent ignores a default it cannot read. A struct default is built on
            // the schema being built, which Connect accepts as its own.
            if let Ok(value) = self.default_value_from_avro(&builder, node, default)
                && !value.is_null()
                && (builder.ty == Type::Struct || builder.validate(&value).is_ok())
            {
                builder.default = Some(value);
            }
        }

        let name = match node.prop(CONNECT_NAME_PROP) {
            Some(JsonNode::Text(name)) => Some(name.clone()),
            Some(other) => {
                return Err(DataError(format!(
                    "Invalid schema name: {}",
                    jackson::write_string(other)
                )));
            }
            None => match &node.kind {
                AvroKind::Record(r) => Some(r.name.full()),
                AvroKind::Enum(e) => Some(e.name.full()),
                AvroKind::Fixed(f) if builder.name.as_deref() != Some(DECIMAL) => {
                    Some(f.name.full())
                }
                _ => None,
            },
        };
        if let Some(name) = name.filter(|n| !n.starts_with(DEFAULT_SCHEMA_FULL_NAME)) {
            match &builder.name {
                Some(existing) if *existing != name => {
                    return Err(DataError(format!(
                        "Mismatched names: name already added to SchemaBuilder ({existing}) differs from name in source schema ({name})"
                    )));
                }
                _ => builder.name = Some(name),
            }
        }
        if force_optional {
            builder.optional = true;
        }
        Ok(builder)
    }

    /// The key and value schemas when `items` is a map entry record.
    fn map_entry<'n>(
        &self,
        items: &'n AvroNode,
    ) -> Result<Option<(&'n AvroNode, &'n AvroNode)>, DataError> {
        let AvroKind::Record(record) = &items.kind else {
            return Ok(None);
        };
        let is_entry = (record.name.namespace.as_deref() == Some(NAMESPACE)
            && record.name.name == MAP_ENTRY_TYPE_NAME)
            || items.text_prop(CONNECT_INTERNAL_TYPE_NAME) == Some(MAP_ENTRY_TYPE_NAME);
        if !is_entry {
            return Ok(None);
        }
        let field = |name: &str| {
            record
                .fields
                .iter()
                .find(|f| f.name == name)
                .map(|f| &f.schema)
        };
        match (record.fields.len(), field(KEY_FIELD), field(VALUE_FIELD)) {
            (2, Some(key), Some(value)) => Ok(Some((key, value))),
            _ => Err(DataError(
                "Found map encoded as array of key-value pairs, but array elements do not match the expected format.".into(),
            )),
        }
    }

    /// `defaultValueFromAvro`: Avro's JSON default as the Connect value of `schema`.
    fn default_value_from_avro(
        &self,
        schema: &Schema,
        node: &AvroNode,
        json: &JsonNode,
    ) -> Result<Value, DataError> {
        let value = self.default_without_logical(schema, node, json)?;
        to_connect_logical(schema, value)
    }

    fn default_without_logical(
        &self,
        schema: &Schema,
        node: &AvroNode,
        json: &JsonNode,
    ) -> Result<Value, DataError> {
        if json.is_null() {
            return Ok(Value::Null);
        }
        let node = self.avro.resolve(node)?;
        Ok(match &node.kind {
            AvroKind::Int => match schema.ty {
                Type::Int8 => Value::Int8(json.int_value() as i8),
                Type::Int16 => Value::Int16(json.int_value() as i16),
                Type::Int32 => Value::Int32(json.int_value()),
                _ => Value::Null,
            },
            AvroKind::Long => Value::Int64(json.long_value()),
            AvroKind::Float => Value::Float32(json.double_value() as f32),
            AvroKind::Double => Value::Float64(json.double_value()),
            AvroKind::Boolean => Value::Boolean(match json {
                JsonNode::Boolean(b) => *b,
                JsonNode::Text(t) => t.trim() == "true",
                other if other.is_number() => other.int_value() != 0,
                _ => false,
            }),
            AvroKind::Null => Value::Null,
            AvroKind::String | AvroKind::Enum(_) => Value::String(match json {
                JsonNode::Text(t) => t.clone(),
                other => jackson::write_string(other),
            }),
            AvroKind::Bytes | AvroKind::Fixed(_) => match json {
                // Avro's JSON for bytes: each character is one byte (ISO-8859-1).
                JsonNode::Text(t) => Value::Bytes(
                    t.chars()
                        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                        .collect(),
                ),
                _ => Value::Null,
            },
            AvroKind::Array(items) => {
                if !matches!(json, JsonNode::Array(_)) {
                    return Err(DataError("Invalid JSON for array default value".into()));
                }
                let element = schema
                    .value_schema
                    .as_deref()
                    .ok_or_else(|| DataError("Array schema has no value schema".into()))?;
                Value::Array(
                    json.elements()
                        .into_iter()
                        .map(|e| self.default_value_from_avro(element, items, e))
                        .collect::<Result<_, _>>()?,
                )
            }
            AvroKind::Map(values) => {
                let JsonNode::Object(members) = json else {
                    return Err(DataError("Invalid JSON for map default value".into()));
                };
                let value_schema = schema
                    .value_schema
                    .as_deref()
                    .ok_or_else(|| DataError("Map schema has no value schema".into()))?;
                Value::Map(
                    members
                        .iter()
                        .map(|(k, v)| {
                            Ok((
                                Value::String(k.clone()),
                                self.default_value_from_avro(value_schema, values, v)?,
                            ))
                        })
                        .collect::<Result<_, DataError>>()?,
                )
            }
            AvroKind::Record(record) => {
                if !matches!(json, JsonNode::Object(_)) {
                    return Err(DataError("Invalid JSON for record default value".into()));
                }
                let mut result = Struct::new(Arc::new(schema.clone()));
                for avro_field in &record.fields {
                    let Some(field) = schema.get_field(&avro_field.name) else {
                        return Err(DataError(format!(
                            "{} is not a valid field name",
                            avro_field.name
                        )));
                    };
                    // A member left out takes the field's own default.
                    let converted = match json.get(&avro_field.name) {
                        Some(member) => {
                            self.default_value_from_avro(&field.schema, &avro_field.schema, member)?
                        }
                        None => default_of(&field.schema).cloned().unwrap_or(Value::Null),
                    };
                    result.put(&avro_field.name, converted)?;
                }
                Value::Struct(result)
            }
            AvroKind::Union(branches) => {
                // A union's default is for its first branch.
                let first = self.avro.resolve(&branches[0])?;
                if matches!(first.kind, AvroKind::Null) {
                    return Ok(Value::Null);
                }
                let field = schema
                    .get_field(&union_member_field_name(first))
                    .ok_or_else(|| DataError("Union default does not match the union".into()))?;
                self.default_value_from_avro(&field.schema, first, json)?
            }
            AvroKind::Reference(_) => unreachable!("references are resolved"),
        })
    }
}

/// Avro data to Connect data (`toConnectData`).
struct ToConnectData<'a> {
    data: &'a AvroData,
    avro: &'a AvroSchema,
}

/// The Java class of an Avro datum, as Confluent's messages print it.
fn avro_java_class(value: &AvroValue) -> &'static str {
    match value.unwrap_union() {
        AvroValue::Null => "null",
        AvroValue::Boolean(_) => "class java.lang.Boolean",
        AvroValue::Int(_) => "class java.lang.Integer",
        AvroValue::Long(_) => "class java.lang.Long",
        AvroValue::Float(_) => "class java.lang.Float",
        AvroValue::Double(_) => "class java.lang.Double",
        AvroValue::Bytes(_) => "class java.nio.HeapByteBuffer",
        AvroValue::String(_) => "class org.apache.avro.util.Utf8",
        AvroValue::Array(_) => "class org.apache.avro.generic.GenericData$Array",
        AvroValue::Map(_) => "class java.util.HashMap",
        AvroValue::Record(_) => "class org.apache.avro.generic.GenericData$Record",
        AvroValue::Enum { .. } => "class org.apache.avro.generic.GenericData$EnumSymbol",
        AvroValue::Fixed { .. } => "class org.apache.avro.generic.GenericData$Fixed",
        AvroValue::Union(..) => unreachable!("unwrapped"),
    }
}

impl ToConnectData<'_> {
    fn record_fields(&self, record: &AvroRecord) -> Result<&[AvroField], DataError> {
        let node = self
            .avro
            .named
            .get(&record.schema_name)
            .or_else(|| anything_schema().named.get(&record.schema_name))
            .ok_or_else(|| DataError(format!("Undefined name: {}", record.schema_name)))?;
        match &node.kind {
            AvroKind::Record(r) => Ok(&r.fields),
            _ => Err(DataError(format!("{} is not a record", record.schema_name))),
        }
    }

    fn field_value<'v>(
        &self,
        record: &'v AvroRecord,
        name: &str,
    ) -> Result<&'v AvroValue, DataError> {
        let fields = self.record_fields(record)?;
        let position = fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| DataError(format!("Not a valid schema field: {name}")))?;
        record
            .values
            .get(position)
            .ok_or_else(|| DataError(format!("Not a valid schema field: {name}")))
    }

    fn value(&self, schema: Option<&SchemaRef>, value: &AvroValue) -> Result<Value, DataError> {
        let Some(schema) = schema else {
            return self.schemaless(value);
        };
        let value = value.unwrap_union();
        if matches!(value, AvroValue::Null) {
            if !schema.optional {
                return Err(DataError("Found null value for non-optional schema".into()));
            }
            return Ok(Value::Null);
        }
        let mismatch = || {
            DataError(format!(
                "Invalid type for {}: {}",
                java_type_name(schema.ty),
                avro_java_class(value)
            ))
        };
        let converted = match schema.ty {
            Type::Int32 => match value {
                AvroValue::Int(v) => Value::Int32(*v),
                _ => return Err(mismatch()),
            },
            Type::Int64 => match value {
                AvroValue::Long(v) => Value::Int64(*v),
                _ => return Err(mismatch()),
            },
            Type::Float32 => match value {
                AvroValue::Float(v) => Value::Float32(*v),
                _ => return Err(mismatch()),
            },
            Type::Float64 => match value {
                AvroValue::Double(v) => Value::Float64(*v),
                _ => return Err(mismatch()),
            },
            Type::Boolean => match value {
                AvroValue::Boolean(v) => Value::Boolean(*v),
                _ => return Err(mismatch()),
            },
            // Encoded as an int; Java's byteValue() and shortValue() keep the low bits.
            Type::Int8 => match value {
                AvroValue::Int(v) => Value::Int8(*v as i8),
                _ => return Err(mismatch()),
            },
            Type::Int16 => match value {
                AvroValue::Int(v) => Value::Int16(*v as i16),
                _ => return Err(mismatch()),
            },
            Type::String => match value {
                AvroValue::String(v) => Value::String(v.clone()),
                AvroValue::Enum { symbol, .. } => Value::String(symbol.clone()),
                other => {
                    return Err(DataError(format!(
                        "Invalid class for string type, expecting String or CharSequence but found {}",
                        avro_java_class(other)
                    )));
                }
            },
            Type::Bytes => match value {
                AvroValue::Bytes(v) | AvroValue::Fixed { bytes: v, .. } => Value::Bytes(v.clone()),
                other => {
                    return Err(DataError(format!(
                        "Invalid class for bytes type, expecting byte[] or ByteBuffer but found {}",
                        avro_java_class(other)
                    )));
                }
            },
            Type::Array => match value {
                AvroValue::Array(items) => {
                    let element = schema.value_schema.as_ref();
                    Value::Array(
                        items
                            .iter()
                            .map(|item| self.value(element, item))
                            .collect::<Result<_, _>>()?,
                    )
                }
                _ => return Err(mismatch()),
            },
            Type::Map => {
                let key_schema = schema.key_schema.as_ref();
                let value_schema = schema.value_schema.as_ref();
                if key_schema.is_some_and(|k| k.ty == Type::String && !k.optional) {
                    let AvroValue::Map(entries) = value else {
                        return Err(mismatch());
                    };
                    Value::Map(
                        entries
                            .iter()
                            .map(|(k, v)| {
                                Ok((Value::String(k.clone()), self.value(value_schema, v)?))
                            })
                            .collect::<Result<_, DataError>>()?,
                    )
                } else {
                    let AvroValue::Array(entries) = value else {
                        return Err(mismatch());
                    };
                    let mut converted: Vec<(Value, Value)> = Vec::with_capacity(entries.len());
                    for entry in entries {
                        let AvroValue::Record(entry) = entry.unwrap_union() else {
                            return Err(mismatch());
                        };
                        let key = self.value(key_schema, self.field_value(entry, KEY_FIELD)?)?;
                        let value =
                            self.value(value_schema, self.field_value(entry, VALUE_FIELD)?)?;
                        put_entry(&mut converted, key, value);
                    }
                    Value::Map(converted)
                }
            }
            Type::Struct => {
                if is_union_schema(schema) {
                    self.union_struct(schema, value)?
                } else {
                    let AvroValue::Record(record) = value else {
                        return Err(mismatch());
                    };
                    let mut result = Struct::new(Arc::clone(schema));
                    for field in &schema.fields {
                        let name = self.data.scrub(&field.name);
                        let field_value =
                            self.value(Some(&field.schema), self.field_value(record, &name)?)?;
                        result.put(&field.name, field_value)?;
                    }
                    Value::Struct(result)
                }
            }
        };
        to_connect_logical(schema, converted)
    }

    /// A general union's value: the struct with the field whose schema the value is
    /// of set, found as Confluent finds it (by the value's Java type, an enum's or fixed
    /// type's name, a record's Connect schema).
    fn union_struct(&self, schema: &SchemaRef, value: &AvroValue) -> Result<Value, DataError> {
        let record_schema = match value {
            AvroValue::Record(record) => {
                let node =
                    self.avro.named.get(&record.schema_name).ok_or_else(|| {
                        DataError(format!("Undefined name: {}", record.schema_name))
                    })?;
                let mut context = ToConnect {
                    data: self.data,
                    avro: self.avro,
                    records_open: Vec::new(),
                };
                Some(context.schema(node, true, None, None)?)
            }
            _ => None,
        };
        let field = schema.fields.iter().find(|field| {
            let candidate = &*field.schema;
            if let Some(enum_name) = candidate.parameters.get(AVRO_TYPE_ENUM).filter(|_| candidate.ty == Type::String) {
                return matches!(value, AvroValue::Enum { schema_name, .. } if schema_name == enum_name);
            }
            match (candidate.ty, value) {
                (Type::Int32, AvroValue::Int(_))
                | (Type::Int64, AvroValue::Long(_))
                | (Type::Float32, AvroValue::Float(_))
                | (Type::Float64, AvroValue::Double(_))
                | (Type::Boolean, AvroValue::Boolean(_))
                | (Type::String, AvroValue::String(_))
                | (Type::Array, AvroValue::Array(_))
                | (Type::Map, AvroValue::Map(_)) => true,
                (Type::Bytes, AvroValue::Bytes(bytes)) => {
                    !is_fixed_schema(candidate) || fixed_size(candidate).is_ok_and(|size| size == bytes.len())
                }
                (Type::Bytes, AvroValue::Fixed { schema_name, .. }) => {
                    !is_fixed_schema(candidate)
                        || schema_name.rsplit('.').next() == Some(union_member_field_name_of_connect(candidate).as_str())
                }
                (Type::Struct, AvroValue::Record(_)) => record_schema.as_ref() == Some(candidate),
                _ => false,
            }
        });
        let Some(field) = field else {
            return Err(DataError(
                "Did not find matching union field for data".into(),
            ));
        };
        let mut result = Struct::new(Arc::clone(schema));
        let converted = self.value(Some(&field.schema), value)?;
        result.put(&field.name, converted)?;
        Ok(Value::Struct(result))
    }

    fn schemaless(&self, value: &AvroValue) -> Result<Value, DataError> {
        let value = value.unwrap_union();
        if matches!(value, AvroValue::Null) {
            return Ok(Value::Null);
        }
        let AvroValue::Record(record) = value else {
            return Err(DataError(
                "Invalid Avro data for schemaless Connect data".into(),
            ));
        };
        for (position, field) in ANYTHING_FIELDS.iter().enumerate() {
            let Some(set) = record.values.get(position).map(AvroValue::unwrap_union) else {
                break;
            };
            if matches!(set, AvroValue::Null) {
                continue;
            }
            return Ok(match (*field, set) {
                ("boolean", AvroValue::Boolean(v)) => Value::Boolean(*v),
                ("bytes", AvroValue::Bytes(v)) => Value::Bytes(v.clone()),
                ("double", AvroValue::Double(v)) => Value::Float64(*v),
                ("float", AvroValue::Float(v)) => Value::Float32(*v),
                ("int", AvroValue::Int(v)) => Value::Int32(*v),
                ("long", AvroValue::Long(v)) => Value::Int64(*v),
                ("string", AvroValue::String(v)) => Value::String(v.clone()),
                ("array", AvroValue::Array(items)) => Value::Array(
                    items
                        .iter()
                        .map(|item| self.schemaless(item))
                        .collect::<Result<_, _>>()?,
                ),
                ("map", AvroValue::Array(entries)) => {
                    let mut converted = Vec::with_capacity(entries.len());
                    for entry in entries {
                        let AvroValue::Record(entry) = entry.unwrap_union() else {
                            return Err(DataError(
                                "Expected a List for schemaless map field".into(),
                            ));
                        };
                        let key = self.schemaless(self.field_value(entry, KEY_FIELD)?)?;
                        let value = self.schemaless(self.field_value(entry, VALUE_FIELD)?)?;
                        put_entry(&mut converted, key, value);
                    }
                    Value::Map(converted)
                }
                (field, other) => {
                    return Err(DataError(format!(
                        "Invalid type for schemaless {field} field: {}",
                        avro_java_class(other)
                    )));
                }
            });
        }
        Ok(Value::Null)
    }
}

/// A map entry as Java's `HashMap.put`: a repeated key replaces the value.
fn put_entry(entries: &mut Vec<(Value, Value)>, key: Value, value: Value) {
    match entries.iter_mut().find(|(k, _)| *k == key) {
        Some(existing) => existing.1 = value,
        None => entries.push((key, value)),
    }
}

#[cfg(test)]
mod tests;
