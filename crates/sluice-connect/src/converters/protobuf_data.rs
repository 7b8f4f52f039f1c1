//! Confluent's `ProtobufData`: Connect schemas and values to and from Protobuf, with no
//! registry involved (the converter around it is [`super::ProtobufConverter`]).
//!
//! Connect → Protobuf. A struct schema becomes a proto3 file with one top-level message,
//! printed as `.proto` text (the text the converter registers) and compiled with protox:
//! - the message is named by the schema's name (its last dotted part; the rest is the
//!   `package`), or Confluent's `ConnectDefault1`, `ConnectDefault2`, ... in the order the
//!   unnamed structs, maps and enums are met;
//! - field numbers come from the field's `io.confluent.connect.protobuf.Tag` parameter, or
//!   count from 1 in field order;
//! - int8 and int16 are `int32` with `(confluent.field_meta).params` `connect.type`;
//!   int64 with `io.confluent.connect.protobuf.Type` keeps its Protobuf type (`sint64`,
//!   `uint32`, ...); arrays are `repeated`; maps are a nested `<Name>Entry` message with
//!   `key = 1` and `value = 2` and a repeated field of it (Confluent's entry-message form,
//!   for every key type); nested structs are nested messages (`<name>Message` when the
//!   name equals the field's); a struct named `io.confluent.connect.protobuf.Union.<x>` is a
//!   `oneof x`; a string (or int32) with `io.confluent.connect.protobuf.Enum` is a nested
//!   enum;
//! - Decimal is `confluent.type.Decimal` (precision and scale in the field's metadata),
//!   Date `google.type.Date`, Time `google.type.TimeOfDay`, Timestamp
//!   `google.protobuf.Timestamp`;
//! - `optional.for.nullables` makes optional fields proto3 `optional`;
//!   `wrapper.for.nullables` makes optional primitives `google.protobuf.*Value` wrappers;
//! - a primitive root schema is its wrapper message (`google.protobuf.Int32Value`, ...).
//!
//! Protobuf → Connect. A message is a struct named by the message's name (full name with
//! `enhanced.protobuf.schema.support`), each field carrying its number as the `Tag`
//! parameter; real oneofs come first as optional union structs (`<oneof>_<index>` with
//! `generate.index.for.unions`), enums are strings (int32 with `int.for.enums`) named by
//! the enum with one parameter per symbol, maps (protoc's or entry messages) are maps,
//! wrappers unwrap with `wrapper.for.nullables`, and the known message types above read
//! back as Connect's logical types.
//!
//! What it does not do: `generalized.sum.type.support` is refused when set; recursive
//! messages are refused (a Connect schema here cannot refer to itself); Connect default
//! values are not written as Protobuf defaults (proto3 has none); Confluent's variant type
//! (`confluent.type.Variant`) is not known.
//!
//! Cost: generating a schema compiles a small file with protox (a fraction of a
//! millisecond); the converter caches it per Connect schema, so a record costs one
//! `DynamicMessage` built field by field and one encode, or one decode and one walk.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use prost_reflect::{
    Cardinality, DynamicMessage, FieldDescriptor, FileDescriptor, Kind, MapKey, MessageDescriptor,
    ReflectMessage as _, Syntax, Value as ProtoValue,
};
use protox::file::{ChainFileResolver, File, FileResolver};
use sluice_registry::known_types::KnownTypesResolver;
use sluice_registry::protobuf::scalar_type_name;

use super::decimal::{BigDecimal, BigInteger};
use super::{Settings, java_class, java_type_name};
use crate::ConfigError;
use crate::data::{
    DATE, DECIMAL, DECIMAL_SCALE, DataError, Schema, SchemaRef, Struct, TIME, TIMESTAMP, Type,
    Value,
};

pub const DEFAULT_SCHEMA_NAME: &str = "ConnectDefault";
pub const PROTOBUF_TYPE_ENUM: &str = "io.confluent.connect.protobuf.Enum";
pub const PROTOBUF_TYPE_UNION: &str = "io.confluent.connect.protobuf.Union";
pub const PROTOBUF_TYPE_UNION_PREFIX: &str = "io.confluent.connect.protobuf.Union.";
pub const PROTOBUF_TYPE_TAG: &str = "io.confluent.connect.protobuf.Tag";
pub const PROTOBUF_TYPE_PROP: &str = "io.confluent.connect.protobuf.Type";
pub const PROTOBUF_TYPE_WRAPPER: &str = "io.confluent.connect.protobuf.Wrapper";
pub const CONNECT_PRECISION_PROP: &str = "connect.decimal.precision";
pub const CONNECT_TYPE_PROP: &str = "connect.type";

const PROTOBUF_PRECISION_PROP: &str = "precision";
const PROTOBUF_SCALE_PROP: &str = "scale";
const MAP_ENTRY_SUFFIX: &str = "Entry";
const KEY_FIELD: &str = "key";
const VALUE_FIELD: &str = "value";
const META_LOCATION: &str = "confluent/meta.proto";
const FIELD_META_EXTENSION: &str = "confluent.field_meta";

const DECIMAL_TYPE: &str = "confluent.type.Decimal";
const DATE_TYPE: &str = "google.type.Date";
const TIME_TYPE: &str = "google.type.TimeOfDay";
const TIMESTAMP_TYPE: &str = "google.protobuf.Timestamp";
const WRAPPERS_LOCATION: &str = "google/protobuf/wrappers.proto";

/// Google's wrapper messages, in the order `google/protobuf/wrappers.proto` declares them
/// (a raw primitive's message indexes count in this order), with each one's value type.
const WRAPPERS: [(&str, &str); 9] = [
    ("DoubleValue", "double"),
    ("FloatValue", "float"),
    ("Int64Value", "int64"),
    ("UInt64Value", "uint64"),
    ("Int32Value", "int32"),
    ("UInt32Value", "uint32"),
    ("BoolValue", "bool"),
    ("StringValue", "string"),
    ("BytesValue", "bytes"),
];

/// The file name generated schemas are compiled under (Confluent's `ProtobufSchema`
/// default name; it is never registered, only the text is).
const GENERATED_FILE_NAME: &str = "default";

const MILLIS_PER_DAY: i64 = 24 * 60 * 60 * 1000;
const NANOS_PER_MILLI: i64 = 1_000_000;

/// `ProtobufDataConfig`'s settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtobufDataConfig {
    /// `enhanced.protobuf.schema.support`: Connect names are full Protobuf names.
    pub enhanced_schema_support: bool,
    /// `scrub.invalid.names`: names made valid Protobuf identifiers.
    pub scrub_invalid_names: bool,
    /// `int.for.enums`: enums read as int32.
    pub int_for_enums: bool,
    /// `optional.for.nullables`: optional Connect fields are proto3 `optional`.
    pub optional_for_nullables: bool,
    /// `optional.for.proto2`: proto2 `optional` fields read as nullable.
    pub optional_for_proto2: bool,
    /// `wrapper.for.nullables`: optional primitives are wrapper messages.
    pub wrapper_for_nullables: bool,
    /// `wrapper.for.raw.primitives`: a top-level wrapper message reads as its primitive.
    pub wrapper_for_raw_primitives: bool,
    /// `generate.struct.for.nulls`: an unset message field reads as its default struct.
    pub generate_struct_for_nulls: bool,
    /// `generate.index.for.unions`: a oneof's Connect field is `<name>_<index>`.
    pub generate_index_for_unions: bool,
    /// `flatten.unions`: a oneof's members are plain fields of the struct.
    pub flatten_unions: bool,
    /// `ignore.default.for.nullables`: a null field is written unset, not as its default.
    pub ignore_default_for_nullables: bool,
    /// `schemas.cache.config`.
    pub schemas_cache_size: usize,
}

impl Default for ProtobufDataConfig {
    fn default() -> ProtobufDataConfig {
        ProtobufDataConfig {
            enhanced_schema_support: false,
            scrub_invalid_names: false,
            int_for_enums: false,
            optional_for_nullables: false,
            optional_for_proto2: true,
            wrapper_for_nullables: false,
            wrapper_for_raw_primitives: true,
            generate_struct_for_nulls: false,
            generate_index_for_unions: true,
            flatten_unions: false,
            ignore_default_for_nullables: false,
            schemas_cache_size: 1000,
        }
    }
}

impl ProtobufDataConfig {
    pub fn parse(settings: &Settings<'_>) -> Result<ProtobufDataConfig, ConfigError> {
        let defaults = ProtobufDataConfig::default();
        let mut errors = ConfigError::default();
        let mut boolean = |name: &str, default: bool| match settings.boolean(name, default) {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                default
            }
        };
        let mut config = ProtobufDataConfig {
            enhanced_schema_support: boolean(
                "enhanced.protobuf.schema.support",
                defaults.enhanced_schema_support,
            ),
            scrub_invalid_names: boolean("scrub.invalid.names", defaults.scrub_invalid_names),
            int_for_enums: boolean("int.for.enums", defaults.int_for_enums),
            optional_for_nullables: boolean(
                "optional.for.nullables",
                defaults.optional_for_nullables,
            ),
            optional_for_proto2: boolean("optional.for.proto2", defaults.optional_for_proto2),
            wrapper_for_nullables: boolean("wrapper.for.nullables", defaults.wrapper_for_nullables),
            wrapper_for_raw_primitives: boolean(
                "wrapper.for.raw.primitives",
                defaults.wrapper_for_raw_primitives,
            ),
            generate_struct_for_nulls: boolean(
                "generate.struct.for.nulls",
                defaults.generate_struct_for_nulls,
            ),
            generate_index_for_unions: boolean(
                "generate.index.for.unions",
                defaults.generate_index_for_unions,
            ),
            flatten_unions: boolean("flatten.unions", defaults.flatten_unions),
            ignore_default_for_nullables: boolean(
                "ignore.default.for.nullables",
                defaults.ignore_default_for_nullables,
            ),
            schemas_cache_size: defaults.schemas_cache_size,
        };
        // Generalized sum types name unions and enums by Connect's generic parameters
        // (`org.apache.kafka.connect.data.Union`), which nothing else here produces or reads.
        if boolean("generalized.sum.type.support", false) {
            errors.push(settings.invalid(
                "generalized.sum.type.support",
                "true",
                "Sluice's ProtobufConverter does not support this setting",
            ));
        }
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

/// A Protobuf schema generated from a Connect schema: the `.proto` text to register and
/// the compiled message records are written as.
#[derive(Debug, Clone)]
pub struct GeneratedSchema {
    pub text: String,
    pub message: MessageDescriptor,
}

impl GeneratedSchema {
    pub fn file(&self) -> FileDescriptor {
        self.message.parent_file()
    }
}

/// Confluent's `ProtobufData`. Method names follow Confluent's (`fromConnectSchema`,
/// `toConnectData`, ...) so a reader of Confluent's code finds them.
#[derive(Debug, Clone, Default)]
pub struct ProtobufData {
    config: ProtobufDataConfig,
}

#[allow(clippy::wrong_self_convention)] // Confluent's method names, kept on purpose.
impl ProtobufData {
    pub fn new(config: ProtobufDataConfig) -> ProtobufData {
        ProtobufData { config }
    }

    pub fn config(&self) -> &ProtobufDataConfig {
        &self.config
    }

    /// The Protobuf schema of a Connect schema (`fromConnectSchema`).
    pub fn from_connect_schema(&self, schema: &Schema) -> Result<GeneratedSchema, DataError> {
        let mut generator = Generator {
            config: &self.config,
            default_index: 0,
            imports: BTreeSet::new(),
        };
        let (text, full_name) = generator.file(schema)?;
        let message = compile(&text, &full_name)?;
        Ok(GeneratedSchema { text, message })
    }

    /// `value` as a message of `generated` (`fromConnectData`); none for a null value.
    pub fn from_connect_data(
        &self,
        schema: &Schema,
        message: &MessageDescriptor,
        value: &Value,
    ) -> Result<Option<DynamicMessage>, DataError> {
        if value.is_null() {
            return Ok(None);
        }
        if schema.ty == Type::Struct {
            let Value::Struct(s) = value else {
                return Err(invalid_type(schema, value));
            };
            return self.message_from_struct(message, schema, s).map(Some);
        }
        // A raw primitive: its wrapper message.
        let mut wrapper = DynamicMessage::new(message.clone());
        let field = message
            .get_field_by_name(VALUE_FIELD)
            .ok_or_else(|| DataError(format!("{} has no value field", message.full_name())))?;
        if let Some(v) = self.single_value(&field.kind(), schema, value)? {
            wrapper.set_field(&field, v);
        }
        Ok(Some(wrapper))
    }

    fn message_from_struct(
        &self,
        descriptor: &MessageDescriptor,
        schema: &Schema,
        value: &Struct,
    ) -> Result<DynamicMessage, DataError> {
        if *value.schema != *schema {
            return Err(DataError("Mismatching struct schema".into()));
        }
        let mut message = DynamicMessage::new(descriptor.clone());
        for field in &schema.fields {
            let field_value = self.struct_value(value, &field.name, field.index);
            if field_value.is_null() {
                continue;
            }
            let name = self.scrub(&field.name);
            if is_union_schema(&field.schema) {
                let Value::Struct(union) = field_value else {
                    return Err(invalid_type(&field.schema, field_value));
                };
                let (member, member_value) = field
                    .schema
                    .fields
                    .iter()
                    .map(|f| (f, self.struct_value(union, &f.name, f.index)))
                    .find(|(_, v)| !v.is_null())
                    .ok_or_else(|| DataError("Cannot find non-null field".into()))?;
                let member_name = self.scrub(&member.name);
                let descriptor_field =
                    descriptor.get_field_by_name(&member_name).ok_or_else(|| {
                        DataError(format!("Cannot find field with name {member_name}"))
                    })?;
                if let Some(v) =
                    self.field_value(&descriptor_field, &member.schema, member_value)?
                {
                    message.set_field(&descriptor_field, v);
                }
                continue;
            }
            let descriptor_field = descriptor
                .get_field_by_name(&name)
                .ok_or_else(|| DataError(format!("Cannot find field with name {name}")))?;
            if let Some(v) = self.field_value(&descriptor_field, &field.schema, field_value)? {
                message.set_field(&descriptor_field, v);
            }
        }
        Ok(message)
    }

    /// A struct's field as Confluent reads it: its default when null, unless
    /// `ignore.default.for.nullables`.
    fn struct_value<'a>(&self, value: &'a Struct, name: &str, index: usize) -> &'a Value {
        if self.config.ignore_default_for_nullables {
            &value.values[index]
        } else {
            value.get(name).unwrap_or(&Value::Null)
        }
    }

    /// The value of a whole field: a list for a repeated field, entries for a map.
    fn field_value(
        &self,
        field: &FieldDescriptor,
        schema: &Schema,
        value: &Value,
    ) -> Result<Option<ProtoValue>, DataError> {
        match (schema.ty, value) {
            (_, Value::Null) => Ok(None),
            (Type::Array, Value::Array(items)) => {
                if items.is_empty() {
                    return Ok(None);
                }
                let element = schema
                    .value_schema
                    .as_deref()
                    .ok_or_else(|| DataError("an array schema without its element".into()))?;
                let mut list = Vec::with_capacity(items.len());
                for item in items {
                    let converted = self
                        .single_value(&field.kind(), element, item)?
                        .ok_or_else(|| {
                            DataError(format!("null element in repeated field {}", field.name()))
                        })?;
                    list.push(converted);
                }
                Ok(Some(ProtoValue::List(list)))
            }
            (Type::Map, Value::Map(entries)) => {
                let Kind::Message(entry) = field.kind() else {
                    return Err(DataError(format!("{} is not a map field", field.name())));
                };
                let key_field = entry.get_field_by_name(KEY_FIELD);
                let value_field = entry.get_field_by_name(VALUE_FIELD);
                let (Some(key_field), Some(value_field)) = (key_field, value_field) else {
                    return Err(DataError(format!(
                        "Invalid message name: {}",
                        entry.full_name()
                    )));
                };
                let key_schema = schema.key_schema.as_deref().unwrap_or(schema);
                let value_schema = schema.value_schema.as_deref().unwrap_or(schema);
                if field.is_map() {
                    let mut map = std::collections::HashMap::with_capacity(entries.len());
                    for (k, v) in entries {
                        let Some(key) = self.single_value(&key_field.kind(), key_schema, k)? else {
                            continue;
                        };
                        let key = map_key(key)?;
                        let v = self
                            .field_value(&value_field, value_schema, v)?
                            .unwrap_or_else(|| ProtoValue::default_value_for_field(&value_field));
                        map.insert(key, v);
                    }
                    return Ok(Some(ProtoValue::Map(map)));
                }
                let mut list = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let mut message = DynamicMessage::new(entry.clone());
                    if let Some(key) = self.field_value(&key_field, key_schema, k)? {
                        message.set_field(&key_field, key);
                    }
                    if let Some(v) = self.field_value(&value_field, value_schema, v)? {
                        message.set_field(&value_field, v);
                    }
                    list.push(ProtoValue::Message(message));
                }
                Ok(Some(ProtoValue::List(list)))
            }
            _ => self.single_value(&field.kind(), schema, value),
        }
    }

    /// One value of a field of kind `kind`.
    fn single_value(
        &self,
        kind: &Kind,
        schema: &Schema,
        value: &Value,
    ) -> Result<Option<ProtoValue>, DataError> {
        if value.is_null() {
            return Ok(None);
        }
        if let Some(logical) = self.logical_to_protobuf(kind, schema, value)? {
            return Ok(Some(logical));
        }
        let invalid = || invalid_type(schema, value);
        let converted = match kind {
            Kind::Message(message) => {
                if let (Type::Struct, Value::Struct(s)) = (schema.ty, value) {
                    ProtoValue::Message(self.message_from_struct(message, schema, s)?)
                } else {
                    // A wrapper around a primitive.
                    let field = message.get_field_by_name(VALUE_FIELD).ok_or_else(invalid)?;
                    let mut wrapper = DynamicMessage::new(message.clone());
                    if let Some(v) = self.single_value(&field.kind(), schema, value)? {
                        wrapper.set_field(&field, v);
                    }
                    ProtoValue::Message(wrapper)
                }
            }
            Kind::Enum(enumeration) => match value {
                Value::Int8(v) => ProtoValue::EnumNumber(i32::from(*v)),
                Value::Int16(v) => ProtoValue::EnumNumber(i32::from(*v)),
                Value::Int32(v) => ProtoValue::EnumNumber(*v),
                Value::String(symbol) => {
                    let tag = schema
                        .parameters
                        .get(&format!("{PROTOBUF_TYPE_ENUM}.{symbol}"))
                        .and_then(|t| t.parse().ok())
                        .or_else(|| enumeration.get_value_by_name(symbol).map(|v| v.number()))
                        .ok_or_else(|| {
                            DataError(format!(
                                "Invalid enum symbol {symbol} for enum {}",
                                enumeration.full_name()
                            ))
                        })?;
                    ProtoValue::EnumNumber(tag)
                }
                _ => return Err(invalid()),
            },
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                ProtoValue::I32(integer(value).ok_or_else(invalid)? as i32)
            }
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
                ProtoValue::I64(integer(value).ok_or_else(invalid)?)
            }
            // Java's `(int) longValue`: the low 32 bits.
            Kind::Uint32 | Kind::Fixed32 => {
                ProtoValue::U32(integer(value).ok_or_else(invalid)? as u32)
            }
            Kind::Uint64 | Kind::Fixed64 => {
                ProtoValue::U64(integer(value).ok_or_else(invalid)? as u64)
            }
            Kind::Float => match value {
                Value::Float32(v) => ProtoValue::F32(*v),
                Value::Float64(v) => ProtoValue::F32(*v as f32),
                _ => return Err(invalid()),
            },
            Kind::Double => match value {
                Value::Float64(v) => ProtoValue::F64(*v),
                Value::Float32(v) => ProtoValue::F64(f64::from(*v)),
                _ => return Err(invalid()),
            },
            Kind::Bool => match value {
                Value::Boolean(v) => ProtoValue::Bool(*v),
                _ => return Err(invalid()),
            },
            Kind::String => match value {
                Value::String(v) => ProtoValue::String(v.clone()),
                _ => return Err(invalid()),
            },
            Kind::Bytes => match value {
                Value::Bytes(v) => ProtoValue::Bytes(v.clone().into()),
                _ => return Err(invalid()),
            },
        };
        Ok(Some(converted))
    }

    /// Connect's logical types as Confluent's messages (`TO_PROTOBUF_LOGICAL_CONVERTERS`).
    fn logical_to_protobuf(
        &self,
        kind: &Kind,
        schema: &Schema,
        value: &Value,
    ) -> Result<Option<ProtoValue>, DataError> {
        let Kind::Message(message) = kind else {
            return Ok(None);
        };
        let expected = |logical: &str, class: &str| {
            DataError(format!(
                "Invalid type for {logical}, expected {class} but was {}",
                java_class(value)
            ))
        };
        let mut built = DynamicMessage::new(message.clone());
        let mut set = |name: &str, v: ProtoValue| -> Result<(), DataError> {
            built
                .try_set_field_by_name(name, v)
                .map_err(|e| DataError(format!("{}: {e}", message.full_name())))
        };
        match schema.name.as_deref() {
            Some(DECIMAL) => {
                let Value::Bytes(bytes) = value else {
                    return Err(expected("Decimal", "BigDecimal"));
                };
                let unscaled = BigInteger::from_twos_complement(bytes)
                    .ok_or_else(|| DataError("Zero length BigInteger".into()))?;
                let scale = schema.decimal_scale().unwrap_or(0);
                let precision = u32::try_from(unscaled.magnitude_digits().len()).unwrap_or(0);
                set(
                    VALUE_FIELD,
                    ProtoValue::Bytes(unscaled.to_twos_complement().into()),
                )?;
                set("precision", ProtoValue::U32(precision.max(1)))?;
                set("scale", ProtoValue::I32(scale))?;
            }
            Some(DATE) => {
                let Value::Int32(days) = value else {
                    return Err(expected("Date", "Date"));
                };
                let (year, month, day) = civil_from_days(i64::from(*days));
                set("year", ProtoValue::I32(year as i32))?;
                set("month", ProtoValue::I32(month as i32))?;
                set("day", ProtoValue::I32(day as i32))?;
            }
            Some(TIME) => {
                let Value::Int32(millis) = value else {
                    return Err(expected("Time", "Date"));
                };
                let millis = i64::from(*millis);
                if !(0..=MILLIS_PER_DAY).contains(&millis) {
                    return Err(DataError(
                        "Time values must use number of millis greater than 0 and less than 86400000"
                            .into(),
                    ));
                }
                set("hours", ProtoValue::I32((millis / 3_600_000) as i32))?;
                set("minutes", ProtoValue::I32((millis / 60_000 % 60) as i32))?;
                set("seconds", ProtoValue::I32((millis / 1000 % 60) as i32))?;
                set(
                    "nanos",
                    ProtoValue::I32(((millis % 1000) * NANOS_PER_MILLI) as i32),
                )?;
            }
            Some(TIMESTAMP) => {
                let Value::Int64(millis) = value else {
                    return Err(expected("Timestamp", "Date"));
                };
                set("seconds", ProtoValue::I64(millis.div_euclid(1000)))?;
                set(
                    "nanos",
                    ProtoValue::I32((millis.rem_euclid(1000) * NANOS_PER_MILLI) as i32),
                )?;
            }
            _ => return Ok(None),
        }
        Ok(Some(ProtoValue::Message(built)))
    }

    /// The Connect schema of `message` (`toConnectSchema`); `version` is the registry's.
    pub fn to_connect_schema(
        &self,
        message: &MessageDescriptor,
        version: Option<i32>,
    ) -> Result<SchemaRef, DataError> {
        let mut schema = match self.unwrapped_root(message) {
            Some(primitive) => primitive,
            None => self.struct_schema(message, &mut Vec::new())?,
        };
        if let Some(version) = version {
            schema.version = Some(version);
        }
        Ok(schema.into())
    }

    fn unwrapped_root(&self, message: &MessageDescriptor) -> Option<Schema> {
        if !self.config.wrapper_for_raw_primitives {
            return None;
        }
        unwrapped_schema(message)
    }

    fn struct_schema(
        &self,
        message: &MessageDescriptor,
        building: &mut Vec<String>,
    ) -> Result<Schema, DataError> {
        if building.iter().any(|name| name == message.full_name()) {
            return Err(DataError(format!(
                "The recursive message {} has no Connect schema here",
                message.full_name()
            )));
        }
        building.push(message.full_name().to_string());
        let mut schema =
            Schema::new(Type::Struct).named(self.name_of(message.name(), message.full_name()));
        for oneof in message.oneofs().filter(|o| !o.is_synthetic()) {
            if self.config.flatten_unions {
                for field in oneof.fields() {
                    let member = self.field_schema(&field, true, building)?;
                    schema = schema.field(field.name(), member);
                }
            } else {
                let mut union = Schema::new(Type::Struct).named(format!(
                    "{PROTOBUF_TYPE_UNION_PREFIX}{}",
                    self.name_of(oneof.name(), oneof.full_name())
                ));
                for field in oneof.fields() {
                    let member = self.field_schema(&field, true, building)?;
                    union = union.field(field.name(), member);
                }
                schema = schema.field(
                    self.union_field_name(oneof.name(), oneof_index(&oneof)),
                    union.optional(),
                );
            }
        }
        for field in message.fields() {
            if in_real_oneof(&field) {
                continue;
            }
            let field_schema = self.field_schema(&field, false, building)?;
            schema = schema.field(field.name(), field_schema);
        }
        building.pop();
        Ok(schema)
    }

    fn union_field_name(&self, name: &str, index: usize) -> String {
        if self.config.generate_index_for_unions {
            format!("{name}_{index}")
        } else {
            name.to_string()
        }
    }

    fn name_of(&self, name: &str, full_name: &str) -> String {
        if self.config.enhanced_schema_support {
            full_name.to_string()
        } else {
            name.to_string()
        }
    }

    fn field_schema(
        &self,
        field: &FieldDescriptor,
        oneof_member: bool,
        building: &mut Vec<String>,
    ) -> Result<Schema, DataError> {
        let kind = field.kind();
        let mut schema = match &kind {
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                match field_meta(field).get(CONNECT_TYPE_PROP).map(String::as_str) {
                    Some("int8") => Schema::new(Type::Int8),
                    Some("int16") => Schema::new(Type::Int16),
                    _ if matches!(kind, Kind::Int32) => Schema::new(Type::Int32),
                    _ => Schema::new(Type::Int32).with_parameter(
                        PROTOBUF_TYPE_PROP,
                        scalar_type_name(&kind).unwrap_or_default(),
                    ),
                }
            }
            Kind::Int64 => Schema::new(Type::Int64),
            Kind::Uint32
            | Kind::Fixed32
            | Kind::Uint64
            | Kind::Sint64
            | Kind::Fixed64
            | Kind::Sfixed64 => Schema::new(Type::Int64).with_parameter(
                PROTOBUF_TYPE_PROP,
                scalar_type_name(&kind).unwrap_or_default(),
            ),
            Kind::Float => Schema::new(Type::Float32),
            Kind::Double => Schema::new(Type::Float64),
            Kind::Bool => Schema::new(Type::Boolean),
            Kind::String => Schema::new(Type::String),
            Kind::Bytes => Schema::new(Type::Bytes),
            Kind::Enum(enumeration) => {
                let ty = if self.config.int_for_enums {
                    Type::Int32
                } else {
                    Type::String
                };
                let mut schema = Schema::new(ty)
                    .named(self.name_of(enumeration.name(), enumeration.full_name()))
                    .with_parameter(PROTOBUF_TYPE_ENUM, enumeration.name());
                for value in enumeration.values() {
                    schema = schema.with_parameter(
                        format!("{PROTOBUF_TYPE_ENUM}.{}", value.name()),
                        value.number().to_string(),
                    );
                }
                schema.optional()
            }
            Kind::Message(message) => {
                let schema = match message.full_name() {
                    DECIMAL_TYPE => {
                        let meta = field_meta(field);
                        let scale = meta
                            .get(PROTOBUF_SCALE_PROP)
                            .and_then(|s| s.parse::<i32>().ok())
                            .unwrap_or(0);
                        let mut schema = Schema::decimal(scale);
                        if let Some(precision) = meta
                            .get(PROTOBUF_PRECISION_PROP)
                            .and_then(|p| p.parse::<i32>().ok())
                        {
                            schema = schema
                                .with_parameter(CONNECT_PRECISION_PROP, precision.to_string());
                        }
                        schema
                    }
                    DATE_TYPE => Schema::date(),
                    TIME_TYPE => Schema::time(),
                    TIMESTAMP_TYPE => Schema::timestamp(),
                    _ => {
                        let unwrapped = if self.config.wrapper_for_nullables {
                            unwrapped_schema(message)
                        } else {
                            None
                        };
                        match unwrapped {
                            Some(schema) => schema,
                            None if is_map_field(field) => self.map_schema(message, building)?,
                            None => self.struct_schema(message, building)?,
                        }
                    }
                };
                schema.optional()
            }
        };
        if field.cardinality() == Cardinality::Repeated && schema.ty != Type::Map {
            schema = Schema::array(schema.optional()).optional();
        }
        if oneof_member {
            schema = schema.optional();
            if self.config.wrapper_for_nullables
                && matches!(&kind, Kind::Message(m) if unwrapped_schema(m).is_some())
            {
                schema = schema.with_parameter(PROTOBUF_TYPE_WRAPPER, "true");
            }
        } else if self.config.optional_for_nullables {
            if self.has_optional_keyword(field) {
                schema = schema.optional();
            }
        } else if !self.config.wrapper_for_nullables {
            schema = schema.optional();
        }
        Ok(schema.with_parameter(PROTOBUF_TYPE_TAG, field.number().to_string()))
    }

    fn map_schema(
        &self,
        entry: &MessageDescriptor,
        building: &mut Vec<String>,
    ) -> Result<Schema, DataError> {
        let mut fields = entry.fields();
        let (Some(key), Some(value)) = (fields.next(), fields.next()) else {
            return Err(DataError(format!(
                "{} is not a map entry",
                entry.full_name()
            )));
        };
        let key_schema = self.field_schema(&key, false, building)?;
        let value_schema = self.field_schema(&value, false, building)?;
        Ok(Schema::map(key_schema, value_schema)
            .named(to_map_field(&self.name_of(entry.name(), entry.full_name()))))
    }

    /// Proto3 `optional`, or a proto2 optional outside a oneof (`optional.for.proto2`).
    fn has_optional_keyword(&self, field: &FieldDescriptor) -> bool {
        field.field_descriptor_proto().proto3_optional()
            || (self.config.optional_for_proto2
                && field.parent_file().syntax() == Syntax::Proto2
                && field.cardinality() == Cardinality::Optional
                && field.containing_oneof().is_none())
    }

    /// `message` as Connect data of `schema` (`toConnectData`).
    pub fn to_connect_data(
        &self,
        schema: &Schema,
        message: &DynamicMessage,
    ) -> Result<Value, DataError> {
        if schema.ty == Type::Struct {
            return self.struct_from_message(schema, message).map(Value::Struct);
        }
        // A raw primitive from its wrapper.
        self.to_connect_value(schema, &ProtoValue::Message(message.clone()))
    }

    fn struct_from_message(
        &self,
        schema: &Schema,
        message: &DynamicMessage,
    ) -> Result<Struct, DataError> {
        let schema_ref: SchemaRef = schema.clone().into();
        let mut result = Struct::new(schema_ref);
        let descriptor = message.descriptor();
        fn field_index<'s>(
            schema: &'s Schema,
            name: &str,
        ) -> Result<(usize, &'s Schema), DataError> {
            schema
                .get_field(name)
                .map(|f| (f.index, &*f.schema))
                .ok_or_else(|| DataError(format!("{name} is not a valid field name")))
        }
        for oneof in descriptor.oneofs().filter(|o| !o.is_synthetic()) {
            let Some(member) = oneof.fields().find(|f| message.has_field(f)) else {
                continue;
            };
            let member_value = message.get_field(&member);
            if self.config.flatten_unions {
                let (index, member_schema) = field_index(schema, member.name())?;
                result.values[index] = self.to_connect_value(member_schema, &member_value)?;
            } else {
                let (index, union_schema) = field_index(
                    schema,
                    &self.union_field_name(oneof.name(), oneof_index(&oneof)),
                )?;
                let mut union = Struct::new(union_schema.clone().into());
                let member_field = union_schema.get_field(member.name()).ok_or_else(|| {
                    DataError(format!("{} is not a valid field name", member.name()))
                })?;
                union.values[member_field.index] =
                    self.to_connect_value(&member_field.schema, &member_value)?;
                result.values[index] = Value::Struct(union);
            }
        }
        for field in descriptor.fields() {
            if in_real_oneof(&field) {
                continue;
            }
            let primitive_or_repeated = !matches!(field.kind(), Kind::Message(_))
                || field.cardinality() == Cardinality::Repeated;
            let optional = field.field_descriptor_proto().proto3_optional()
                || (self.config.optional_for_proto2 && self.has_optional_keyword(&field));
            if (primitive_or_repeated && !optional)
                || self.config.generate_struct_for_nulls
                || message.has_field(&field)
            {
                let (index, field_schema) = field_index(schema, field.name())?;
                result.values[index] =
                    self.to_connect_value(field_schema, &message.get_field(&field))?;
            }
        }
        Ok(result)
    }

    fn to_connect_value(&self, schema: &Schema, value: &ProtoValue) -> Result<Value, DataError> {
        if let Some(logical) = logical_to_connect(schema, value)? {
            return Ok(logical);
        }
        // A wrapper message around a primitive.
        let unwrapped;
        let value = match (schema.ty.is_primitive(), value) {
            (true, ProtoValue::Message(message)) => {
                unwrapped = message
                    .get_field_by_name(VALUE_FIELD)
                    .map(|v| v.into_owned())
                    .ok_or_else(|| {
                        DataError(format!(
                            "{} is not a wrapper",
                            message.descriptor().full_name()
                        ))
                    })?;
                &unwrapped
            }
            _ => value,
        };
        let invalid = || {
            DataError(format!(
                "Invalid type for {}: {}",
                java_type_name(schema.ty),
                proto_class(value)
            ))
        };
        Ok(match schema.ty {
            Type::Int8 => Value::Int8(proto_integer(value).ok_or_else(invalid)? as i8),
            Type::Int16 => Value::Int16(proto_integer(value).ok_or_else(invalid)? as i16),
            Type::Int32 => Value::Int32(proto_integer(value).ok_or_else(invalid)? as i32),
            Type::Int64 => Value::Int64(match value {
                ProtoValue::I64(v) => *v,
                ProtoValue::U64(v) => *v as i64,
                ProtoValue::U32(v) => i64::from(*v),
                // Java's `Integer.toUnsignedLong` of any other number.
                other => i64::from(proto_integer(other).ok_or_else(invalid)? as i32 as u32),
            }),
            Type::Float32 => match value {
                ProtoValue::F32(v) => Value::Float32(*v),
                ProtoValue::F64(v) => Value::Float32(*v as f32),
                _ => return Err(invalid()),
            },
            Type::Float64 => match value {
                ProtoValue::F64(v) => Value::Float64(*v),
                ProtoValue::F32(v) => Value::Float64(f64::from(*v)),
                _ => return Err(invalid()),
            },
            Type::Boolean => match value {
                ProtoValue::Bool(v) => Value::Boolean(*v),
                _ => return Err(invalid()),
            },
            Type::String => match value {
                ProtoValue::String(v) => Value::String(v.clone()),
                ProtoValue::EnumNumber(number) => Value::String(enum_symbol(schema, *number)),
                _ => return Err(invalid()),
            },
            Type::Bytes => match value {
                ProtoValue::Bytes(v) => Value::Bytes(v.to_vec()),
                _ => return Err(invalid()),
            },
            Type::Array => {
                let ProtoValue::List(items) = value else {
                    return Err(invalid());
                };
                let element = schema.value_schema.as_deref().ok_or_else(invalid)?;
                Value::Array(
                    items
                        .iter()
                        .map(|item| self.to_connect_value(element, item))
                        .collect::<Result<_, _>>()?,
                )
            }
            Type::Map => {
                let key_schema = schema.key_schema.as_deref().ok_or_else(invalid)?;
                let value_schema = schema.value_schema.as_deref().ok_or_else(invalid)?;
                let mut entries = Vec::new();
                match value {
                    ProtoValue::Map(map) => {
                        // protoc's maps have no order; sorted keys keep the output stable.
                        let mut sorted: Vec<_> = map.iter().collect();
                        sorted.sort_by(|a, b| map_key_order(a.0, b.0));
                        for (k, v) in sorted {
                            entries.push((
                                self.to_connect_value(key_schema, &k.clone().into())?,
                                self.to_connect_value(value_schema, v)?,
                            ));
                        }
                    }
                    ProtoValue::List(items) => {
                        for item in items {
                            let ProtoValue::Message(entry) = item else {
                                return Err(invalid());
                            };
                            let k = entry.get_field_by_name(KEY_FIELD).ok_or_else(invalid)?;
                            let v = entry.get_field_by_name(VALUE_FIELD).ok_or_else(invalid)?;
                            entries.push((
                                self.to_connect_value(key_schema, &k)?,
                                self.to_connect_value(value_schema, &v)?,
                            ));
                        }
                    }
                    _ => return Err(invalid()),
                }
                Value::Map(entries)
            }
            Type::Struct => {
                let ProtoValue::Message(message) = value else {
                    return Err(invalid());
                };
                Value::Struct(self.struct_from_message(schema, message)?)
            }
        })
    }

    fn scrub(&self, name: &str) -> String {
        if self.config.scrub_invalid_names {
            scrub_name(name)
        } else {
            name.to_string()
        }
    }
}

/// Writes the `.proto` text of a Connect schema (`fromConnectSchema`'s definitions).
struct Generator<'a> {
    config: &'a ProtobufDataConfig,
    /// The last `ConnectDefault<n>` handed out.
    default_index: u32,
    imports: BTreeSet<&'static str>,
}

/// A message being written: its items in the order Confluent adds them.
struct MessageText {
    name: String,
    items: Vec<Item>,
    /// Names of the nested messages and enums already declared.
    declared: BTreeSet<String>,
}

enum Item {
    Field(String),
    Oneof(String, Vec<String>),
    Message(MessageText),
    Enum(String, Vec<(String, i32)>),
}

impl Generator<'_> {
    /// The file and the full name of its message.
    fn file(&mut self, schema: &Schema) -> Result<(String, String), DataError> {
        if schema.ty != Type::Struct {
            return self.wrapper_file(schema);
        }
        let full_name = self.name_or_default(schema.name.as_deref());
        let (package, name) = self.split_name(&full_name);
        let message = self.message(&name, schema)?;
        let mut body = String::new();
        print_message(&message, 0, &mut body);
        let mut text = String::from("syntax = \"proto3\";\n");
        if let Some(package) = &package {
            let _ = writeln!(text, "package {package};");
        }
        if !self.imports.is_empty() {
            text.push('\n');
            for import in &self.imports {
                let _ = writeln!(text, "import \"{import}\";");
            }
        }
        text.push('\n');
        text.push_str(&body);
        let full = match package {
            Some(package) => format!("{package}.{name}"),
            None => name,
        };
        Ok((text, full))
    }

    /// A primitive at the top: Google's wrapper messages, as Confluent registers
    /// `wrappers.proto` for them.
    fn wrapper_file(&mut self, schema: &Schema) -> Result<(String, String), DataError> {
        if schema
            .name
            .as_deref()
            .is_some_and(|n| [DECIMAL, DATE, TIME, TIMESTAMP].contains(&n))
        {
            return Err(DataError(format!(
                "Unsupported root schema of type {} with logical type {}",
                java_type_name(schema.ty),
                schema.name.as_deref().unwrap_or_default()
            )));
        }
        let wrapper = match schema.ty {
            Type::Int8 | Type::Int16 | Type::Int32 => "Int32Value",
            Type::Int64 => "Int64Value",
            Type::Float32 => "FloatValue",
            Type::Float64 => "DoubleValue",
            Type::Boolean => "BoolValue",
            Type::String => "StringValue",
            Type::Bytes => "BytesValue",
            other => {
                return Err(DataError(format!(
                    "Unsupported root schema of type {}",
                    java_type_name(other)
                )));
            }
        };
        let mut text = String::from("syntax = \"proto3\";\npackage google.protobuf;\n");
        for (name, ty) in WRAPPERS {
            let _ = write!(text, "\nmessage {name} {{\n  {ty} value = 1;\n}}\n");
        }
        Ok((text, format!("google.protobuf.{wrapper}")))
    }

    fn message(&mut self, name: &str, schema: &Schema) -> Result<MessageText, DataError> {
        let mut message = MessageText {
            name: name.to_string(),
            items: Vec::new(),
            declared: BTreeSet::new(),
        };
        let mut next_tag = 1;
        for field in &schema.fields {
            let tag = match tag_parameter(&field.schema)? {
                Some(tag) => tag,
                None => {
                    let tag = next_tag;
                    next_tag += 1;
                    tag
                }
            };
            let name = self.scrub(&field.name);
            if let Some(line) = self.field(&mut message, &field.schema, &name, tag, false)? {
                message.items.push(Item::Field(line));
            }
        }
        Ok(message)
    }

    /// A field's line; none for a union, which became a `oneof` of `message`.
    fn field(
        &mut self,
        message: &mut MessageText,
        schema: &Schema,
        name: &str,
        tag: i64,
        oneof_member: bool,
    ) -> Result<Option<String>, DataError> {
        let label = match schema.ty {
            Type::Array | Type::Map => Some("repeated"),
            _ if self.config.optional_for_nullables && schema.optional && !oneof_member => {
                Some("optional")
            }
            _ => None,
        };
        let element = if schema.ty == Type::Array {
            schema
                .value_schema
                .as_deref()
                .ok_or_else(|| DataError("an array schema without its element".into()))?
        } else {
            schema
        };
        let mut params = BTreeMap::new();
        let ty = self.data_type(element, name, &mut params, oneof_member)?;
        match element.ty {
            Type::Struct if is_union_schema(element) => {
                let union_name = element
                    .name
                    .as_deref()
                    .and_then(|n| n.strip_prefix(PROTOBUF_TYPE_UNION_PREFIX))
                    .unwrap_or_default();
                let union_name = self.unqualified_name(Some(union_name));
                let mut members = Vec::new();
                for member in &element.fields {
                    let tag = tag_parameter(&member.schema)?.unwrap_or(0);
                    let member_name = self.scrub(&member.name);
                    if let Some(line) =
                        self.field(message, &member.schema, &member_name, tag, true)?
                    {
                        members.push(line);
                    }
                }
                message.items.push(Item::Oneof(union_name, members));
                return Ok(None);
            }
            // A struct named as the message it is in refers to that message (Confluent's
            // `FromConnectContext.contains`); one declared already is reused.
            Type::Struct if ty != message.name && !message.declared.contains(&ty) => {
                message.declared.insert(ty.clone());
                let nested = self.message(&ty, element)?;
                message.items.push(Item::Message(nested));
            }
            Type::Struct => {}
            Type::Map => {
                let mut entry = MessageText {
                    name: ty.clone(),
                    items: Vec::new(),
                    declared: BTreeSet::new(),
                };
                let key_schema = element.key_schema.as_deref().unwrap_or(element);
                let value_schema = element.value_schema.as_deref().unwrap_or(element);
                for (field_name, field_schema, field_tag) in
                    [(KEY_FIELD, key_schema, 1), (VALUE_FIELD, value_schema, 2)]
                {
                    if let Some(line) =
                        self.field(&mut entry, field_schema, field_name, field_tag, false)?
                    {
                        entry.items.push(Item::Field(line));
                    }
                }
                message.items.push(Item::Message(entry));
            }
            _ if is_enum_schema(element) => {
                let enum_name = self.unqualified_name(element.name.as_deref());
                if !message.declared.contains(&enum_name) {
                    message.declared.insert(enum_name.clone());
                    let prefix = format!("{PROTOBUF_TYPE_ENUM}.");
                    let mut values: Vec<(String, i32)> = Vec::new();
                    for (key, value) in &element.parameters {
                        if let Some(symbol) = key.strip_prefix(&prefix) {
                            let number = value
                                .parse()
                                .map_err(|_| DataError(format!("For input string: \"{value}\"")))?;
                            values.push((symbol.to_string(), number));
                        }
                    }
                    // Connect's parameters are sorted by name here; proto3 needs the zero
                    // value first, and declaration order by number is what protoc files have.
                    values.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
                    message.items.push(Item::Enum(enum_name, values));
                }
            }
            _ => {}
        }
        let mut line = String::new();
        if let Some(label) = label {
            line.push_str(label);
            line.push(' ');
        }
        let _ = write!(line, "{ty} {name} = {tag}");
        if !params.is_empty() {
            self.imports.insert(META_LOCATION);
            let entries: Vec<String> = params
                .iter()
                .map(|(k, v)| format!("{{ key: {}, value: {} }}", quote(k), quote(v)))
                .collect();
            let _ = write!(
                line,
                " [({FIELD_META_EXTENSION}) = {{ params: [{}] }}]",
                entries.join(", ")
            );
        }
        line.push(';');
        Ok(Some(line))
    }

    /// The Protobuf type of a (non-array) Connect schema (`dataTypeFromConnectSchema`),
    /// adding its import; `params` receives the field's Confluent metadata.
    fn data_type(
        &mut self,
        schema: &Schema,
        field_name: &str,
        params: &mut BTreeMap<String, String>,
        oneof_member: bool,
    ) -> Result<String, DataError> {
        match schema.name.as_deref() {
            Some(DECIMAL) => {
                if let Some(precision) = schema.parameters.get(CONNECT_PRECISION_PROP) {
                    params.insert(PROTOBUF_PRECISION_PROP.into(), precision.clone());
                }
                if let Some(scale) = schema.parameters.get(DECIMAL_SCALE) {
                    params.insert(PROTOBUF_SCALE_PROP.into(), scale.clone());
                }
                self.imports.insert("confluent/type/decimal.proto");
                return Ok(DECIMAL_TYPE.into());
            }
            Some(DATE) => {
                self.imports.insert("google/type/date.proto");
                return Ok(DATE_TYPE.into());
            }
            Some(TIME) => {
                self.imports.insert("google/type/timeofday.proto");
                return Ok(TIME_TYPE.into());
            }
            Some(TIMESTAMP) => {
                self.imports.insert("google/protobuf/timestamp.proto");
                return Ok(TIMESTAMP_TYPE.into());
            }
            _ => {}
        }
        let wrapped = self.config.wrapper_for_nullables
            && schema.optional
            && (!oneof_member
                || schema
                    .parameters
                    .get(PROTOBUF_TYPE_WRAPPER)
                    .is_some_and(|v| v.eq_ignore_ascii_case("true")));
        let mut wrapper = |name: &str, plain: &str| -> String {
            if wrapped {
                self.imports.insert(WRAPPERS_LOCATION);
                format!("google.protobuf.{name}")
            } else {
                plain.to_string()
            }
        };
        let protobuf_type = schema.parameters.get(PROTOBUF_TYPE_PROP).cloned();
        let enum_type = schema.parameters.get(PROTOBUF_TYPE_ENUM).cloned();
        Ok(match schema.ty {
            Type::Int8 => {
                params.insert(CONNECT_TYPE_PROP.into(), "int8".into());
                wrapper("Int32Value", "int32")
            }
            Type::Int16 => {
                params.insert(CONNECT_TYPE_PROP.into(), "int16".into());
                wrapper("Int32Value", "int32")
            }
            Type::Int32 => match enum_type {
                Some(enum_type) => enum_type,
                None => {
                    let plain = protobuf_type.unwrap_or_else(|| "int32".into());
                    wrapper("Int32Value", &plain)
                }
            },
            Type::Int64 => {
                let plain = protobuf_type.unwrap_or_else(|| "int64".into());
                let name = match plain.as_str() {
                    "uint32" | "fixed32" => "UInt32Value",
                    "uint64" | "fixed64" => "UInt64Value",
                    _ => "Int64Value",
                };
                wrapper(name, &plain)
            }
            Type::Float32 => wrapper("FloatValue", "float"),
            Type::Float64 => wrapper("DoubleValue", "double"),
            Type::Boolean => wrapper("BoolValue", "bool"),
            Type::String => match enum_type {
                Some(enum_type) => enum_type,
                None => wrapper("StringValue", "string"),
            },
            Type::Bytes => wrapper("BytesValue", "bytes"),
            Type::Array => return Err(DataError("Array cannot be nested".into())),
            Type::Map => to_map_entry(&self.unqualified_name(schema.name.as_deref())),
            Type::Struct => {
                let name = self.unqualified_name(schema.name.as_deref());
                if name == field_name {
                    // A message type cannot share its field's name.
                    format!("{name}Message")
                } else {
                    name
                }
            }
        })
    }

    fn name_or_default(&mut self, name: Option<&str>) -> String {
        match name {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => {
                self.default_index += 1;
                format!("{DEFAULT_SCHEMA_NAME}{}", self.default_index)
            }
        }
    }

    fn unqualified_name(&mut self, name: Option<&str>) -> String {
        let full = self.name_or_default(name);
        let last = full.rsplit('.').next().unwrap_or(&full).to_string();
        self.scrub(&last)
    }

    /// (package, name) of a dotted full name, each part scrubbed when asked.
    fn split_name(&self, full_name: &str) -> (Option<String>, String) {
        let parts: Vec<String> = full_name.split('.').map(|p| self.scrub(p)).collect();
        match parts.split_last() {
            Some((name, [])) => (None, name.clone()),
            Some((name, package)) => (Some(package.join(".")), name.clone()),
            None => (None, full_name.to_string()),
        }
    }

    fn scrub(&self, name: &str) -> String {
        if self.config.scrub_invalid_names {
            scrub_name(name)
        } else {
            name.to_string()
        }
    }
}

fn print_message(message: &MessageText, depth: usize, out: &mut String) {
    let indent = "  ".repeat(depth);
    let _ = writeln!(out, "{indent}message {} {{", message.name);
    for item in &message.items {
        match item {
            Item::Field(line) => {
                let _ = writeln!(out, "{indent}  {line}");
            }
            Item::Oneof(name, members) => {
                let _ = writeln!(out, "{indent}  oneof {name} {{");
                for member in members {
                    let _ = writeln!(out, "{indent}    {member}");
                }
                let _ = writeln!(out, "{indent}  }}");
            }
            Item::Message(nested) => print_message(nested, depth + 1, out),
            Item::Enum(name, values) => {
                let _ = writeln!(out, "{indent}  enum {name} {{");
                for (symbol, number) in values {
                    let _ = writeln!(out, "{indent}    {symbol} = {number};");
                }
                let _ = writeln!(out, "{indent}  }}");
            }
        }
    }
    let _ = writeln!(out, "{indent}}}");
}

/// Compiles generated text and answers its message `full_name`.
fn compile(text: &str, full_name: &str) -> Result<MessageDescriptor, DataError> {
    let invalid =
        |e: protox::Error| DataError(format!("Invalid protobuf schema definition: {e:?}"));
    let main = File::from_source(GENERATED_FILE_NAME, text).map_err(invalid)?;
    let mut resolver = ChainFileResolver::new();
    resolver.add(SingleFile(main));
    resolver.add(KnownTypesResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.open_file(GENERATED_FILE_NAME).map_err(invalid)?;
    compiler
        .descriptor_pool()
        .get_message_by_name(full_name)
        .ok_or_else(|| DataError(format!("Invalid message name: {full_name}")))
}

struct SingleFile(File);

impl FileResolver for SingleFile {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if name == GENERATED_FILE_NAME {
            Ok(self.0.clone())
        } else {
            Err(protox::Error::file_not_found(name))
        }
    }
}

/// Confluent's `ProtobufSchema.toMapEntry`: `my_map` → `MyMapEntry`.
fn to_map_entry(name: &str) -> String {
    let camel = if name.contains('_') {
        name.split('_')
            .map(|word| {
                let mut chars = word.chars();
                match chars.next() {
                    Some(first) => first
                        .to_uppercase()
                        .chain(chars.flat_map(char::to_lowercase))
                        .collect(),
                    None => String::new(),
                }
            })
            .collect()
    } else {
        name.to_string()
    };
    format!("{camel}{MAP_ENTRY_SUFFIX}")
}

/// Confluent's `ProtobufSchema.toMapField`: `ConnectDefault2Entry` → `connect_default2`.
fn to_map_field(name: &str) -> String {
    let (prefix, last) = match name.rsplit_once('.') {
        Some((prefix, last)) => (Some(prefix), last),
        None => (None, name),
    };
    let last = match last.strip_suffix(MAP_ENTRY_SUFFIX) {
        Some(stripped) => {
            let mut out = String::new();
            for (i, c) in stripped.chars().enumerate() {
                if c.is_ascii_uppercase() {
                    if i > 0 {
                        out.push('_');
                    }
                    out.push(c.to_ascii_lowercase());
                } else {
                    out.push(c);
                }
            }
            out
        }
        None => last.to_string(),
    };
    match prefix {
        Some(prefix) => format!("{prefix}.{last}"),
        None => last,
    }
}

/// Confluent's `doScrubName`: a valid Protobuf identifier, URL-encoding what is not and
/// replacing what remains invalid with `_`.
pub fn scrub_name(name: &str) -> String {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let starts_ok = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| !c.is_ascii_digit() && c != '_')
    };
    if name.is_empty() || (name.chars().all(valid) && starts_ok(name)) {
        return name.to_string();
    }
    // Java's URLEncoder: unreserved [A-Za-z0-9.*_-] kept, space to '+', the rest %XX.
    let mut encoded = String::new();
    for byte in name.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'*' | b'_' | b'-' => {
                encoded.push(byte as char)
            }
            b' ' => encoded.push('+'),
            other => {
                let _ = write!(encoded, "%{other:02X}");
            }
        }
    }
    if encoded.starts_with(|c: char| c.is_ascii_digit() || c == '_') {
        encoded.insert(0, 'x');
    }
    encoded
        .chars()
        .map(|c| if valid(c) { c } else { '_' })
        .collect()
}

fn quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn tag_parameter(schema: &Schema) -> Result<Option<i64>, DataError> {
    match schema.parameters.get(PROTOBUF_TYPE_TAG) {
        None => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| DataError(format!("For input string: \"{text}\""))),
    }
}

fn is_union_schema(schema: &Schema) -> bool {
    schema.ty == Type::Struct
        && schema
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with(PROTOBUF_TYPE_UNION))
}

fn is_enum_schema(schema: &Schema) -> bool {
    schema.parameters.contains_key(PROTOBUF_TYPE_ENUM)
}

/// A oneof's position among its message's oneofs (synthetic ones included), as protobuf-java's
/// `OneofDescriptor.getIndex()`: the last element of its descriptor path.
fn oneof_index(oneof: &prost_reflect::OneofDescriptor) -> usize {
    oneof
        .path()
        .last()
        .map_or(0, |&i| usize::try_from(i).unwrap_or(0))
}

fn in_real_oneof(field: &FieldDescriptor) -> bool {
    field.containing_oneof().is_some_and(|o| !o.is_synthetic())
}

/// Confluent's `isMapDescriptor`: a repeated `...Entry` message of `key` and `value`.
fn is_map_field(field: &FieldDescriptor) -> bool {
    if field.cardinality() != Cardinality::Repeated {
        return false;
    }
    let Kind::Message(entry) = field.kind() else {
        return false;
    };
    let fields: Vec<FieldDescriptor> = entry.fields().collect();
    entry.name().ends_with(MAP_ENTRY_SUFFIX)
        && fields.len() == 2
        && fields[0].name() == KEY_FIELD
        && fields[1].name() == VALUE_FIELD
        && fields
            .iter()
            .all(|f| f.cardinality() != Cardinality::Repeated)
}

/// The primitive a wrapper message unwraps to (`toUnwrappedSchema`).
fn unwrapped_schema(message: &MessageDescriptor) -> Option<Schema> {
    let ty = match message.full_name() {
        "google.protobuf.DoubleValue" => Type::Float64,
        "google.protobuf.FloatValue" => Type::Float32,
        "google.protobuf.Int64Value"
        | "google.protobuf.UInt64Value"
        | "google.protobuf.UInt32Value" => Type::Int64,
        "google.protobuf.Int32Value" => Type::Int32,
        "google.protobuf.BoolValue" => Type::Boolean,
        "google.protobuf.StringValue" => Type::String,
        "google.protobuf.BytesValue" => Type::Bytes,
        _ => return None,
    };
    Some(Schema::new(ty))
}

/// `(confluent.field_meta).params` of a field, empty when it has none.
fn field_meta(field: &FieldDescriptor) -> BTreeMap<String, String> {
    let mut params = BTreeMap::new();
    let Some(extension) = field
        .parent_pool()
        .get_extension_by_name(FIELD_META_EXTENSION)
    else {
        return params;
    };
    let options = field.options();
    if !options.has_extension(&extension) {
        return params;
    }
    if let ProtoValue::Message(meta) = &*options.get_extension(&extension)
        && let Some(value) = meta.get_field_by_name("params")
        && let ProtoValue::Map(map) = &*value
    {
        for (k, v) in map {
            if let (MapKey::String(k), ProtoValue::String(v)) = (k, v) {
                params.insert(k.clone(), v.clone());
            }
        }
    }
    params
}

fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Int8(v) => Some(i64::from(*v)),
        Value::Int16(v) => Some(i64::from(*v)),
        Value::Int32(v) => Some(i64::from(*v)),
        Value::Int64(v) => Some(*v),
        _ => None,
    }
}

fn proto_integer(value: &ProtoValue) -> Option<i64> {
    match value {
        ProtoValue::I32(v) | ProtoValue::EnumNumber(v) => Some(i64::from(*v)),
        ProtoValue::I64(v) => Some(*v),
        ProtoValue::U32(v) => Some(i64::from(*v)),
        ProtoValue::U64(v) => Some(*v as i64),
        _ => None,
    }
}

/// The Java class protobuf-java would hold a value as, for error texts.
fn proto_class(value: &ProtoValue) -> &'static str {
    match value {
        ProtoValue::Bool(_) => "class java.lang.Boolean",
        ProtoValue::I32(_) | ProtoValue::U32(_) => "class java.lang.Integer",
        ProtoValue::I64(_) | ProtoValue::U64(_) => "class java.lang.Long",
        ProtoValue::F32(_) => "class java.lang.Float",
        ProtoValue::F64(_) => "class java.lang.Double",
        ProtoValue::String(_) => "class java.lang.String",
        ProtoValue::Bytes(_) => "class com.google.protobuf.ByteString",
        ProtoValue::EnumNumber(_) => "class com.google.protobuf.Descriptors$EnumValueDescriptor",
        ProtoValue::Message(_) => "class com.google.protobuf.DynamicMessage",
        ProtoValue::List(_) => "class java.util.Collections$UnmodifiableRandomAccessList",
        ProtoValue::Map(_) => "class java.util.HashMap",
    }
}

fn invalid_type(schema: &Schema, value: &Value) -> DataError {
    DataError(format!(
        "Invalid type for {}: {}",
        java_type_name(schema.ty),
        java_class(value)
    ))
}

/// The symbol of enum value `number` from the schema's parameters; protobuf-java's name
/// for an unknown value of an open enum otherwise.
fn enum_symbol(schema: &Schema, number: i32) -> String {
    let prefix = format!("{PROTOBUF_TYPE_ENUM}.");
    let wanted = number.to_string();
    schema
        .parameters
        .iter()
        .find(|(k, v)| k.starts_with(&prefix) && **v == wanted)
        .map(|(k, _)| k[prefix.len()..].to_string())
        .unwrap_or_else(|| {
            let enum_name = schema
                .parameters
                .get(PROTOBUF_TYPE_ENUM)
                .map(String::as_str)
                .unwrap_or_default();
            format!("UNKNOWN_ENUM_VALUE_{enum_name}_{number}")
        })
}

fn map_key(value: ProtoValue) -> Result<MapKey, DataError> {
    Ok(match value {
        ProtoValue::Bool(v) => MapKey::Bool(v),
        ProtoValue::I32(v) => MapKey::I32(v),
        ProtoValue::I64(v) => MapKey::I64(v),
        ProtoValue::U32(v) => MapKey::U32(v),
        ProtoValue::U64(v) => MapKey::U64(v),
        ProtoValue::String(v) => MapKey::String(v),
        other => {
            return Err(DataError(format!(
                "{} cannot be a map key",
                proto_class(&other)
            )));
        }
    })
}

fn map_key_order(a: &MapKey, b: &MapKey) -> std::cmp::Ordering {
    match (a, b) {
        (MapKey::Bool(a), MapKey::Bool(b)) => a.cmp(b),
        (MapKey::I32(a), MapKey::I32(b)) => a.cmp(b),
        (MapKey::I64(a), MapKey::I64(b)) => a.cmp(b),
        (MapKey::U32(a), MapKey::U32(b)) => a.cmp(b),
        (MapKey::U64(a), MapKey::U64(b)) => a.cmp(b),
        (MapKey::String(a), MapKey::String(b)) => a.cmp(b),
        _ => std::cmp::Ordering::Equal,
    }
}

/// Confluent's messages as Connect's logical values (`TO_CONNECT_LOGICAL_CONVERTERS`).
fn logical_to_connect(schema: &Schema, value: &ProtoValue) -> Result<Option<Value>, DataError> {
    let logical = match schema.name.as_deref() {
        Some(name @ (DECIMAL | DATE | TIME | TIMESTAMP)) => name,
        _ => return Ok(None),
    };
    let short = logical.rsplit('.').next().unwrap_or(logical);
    let ProtoValue::Message(message) = value else {
        return Err(DataError(format!(
            "Invalid type for {short}, expected Message but was {}",
            proto_class(value)
        )));
    };
    let int = |name: &str| -> i64 {
        message
            .get_field_by_name(name)
            .and_then(|v| proto_integer(&v))
            .unwrap_or(0)
    };
    Ok(Some(match logical {
        DECIMAL => {
            let bytes = match message.get_field_by_name(VALUE_FIELD).as_deref() {
                Some(ProtoValue::Bytes(b)) => b.to_vec(),
                _ => Vec::new(),
            };
            let unscaled = if bytes.is_empty() {
                BigInteger::zero()
            } else {
                BigInteger::from_twos_complement(&bytes)
                    .ok_or_else(|| DataError("Zero length BigInteger".into()))?
            };
            let written = BigDecimal::new(unscaled, int("scale") as i32);
            let scale = schema.decimal_scale().unwrap_or(0);
            let rescaled = written.rescale(scale).ok_or_else(|| {
                DataError(format!(
                    "Decimal value {} does not have the schema's scale {scale}",
                    written.to_java_string()
                ))
            })?;
            Value::Bytes(rescaled.unscaled.to_twos_complement())
        }
        DATE => {
            let (year, month, day) = (int("year"), int("month"), int("day"));
            if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
                return Err(DataError(format!("Invalid date {year}-{month}-{day}")));
            }
            let days = days_from_civil(year, month, day);
            Value::Int32(
                i32::try_from(days)
                    .map_err(|_| DataError(format!("Date {year}-{month}-{day} out of range")))?,
            )
        }
        TIME => {
            let (hours, minutes, seconds, nanos) =
                (int("hours"), int("minutes"), int("seconds"), int("nanos"));
            if !(0..24).contains(&hours)
                || !(0..60).contains(&minutes)
                || !(0..60).contains(&seconds)
                || !(0..1_000_000_000).contains(&nanos)
            {
                return Err(DataError(format!(
                    "Invalid time {hours}:{minutes}:{seconds}.{nanos}"
                )));
            }
            let millis =
                hours * 3_600_000 + minutes * 60_000 + seconds * 1000 + nanos / NANOS_PER_MILLI;
            Value::Int32(millis as i32)
        }
        _ => {
            let millis = int("seconds")
                .checked_mul(1000)
                .and_then(|m| m.checked_add(int("nanos") / NANOS_PER_MILLI))
                .ok_or_else(|| DataError("Timestamp out of range".into()))?;
            Value::Int64(millis)
        }
    }))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
